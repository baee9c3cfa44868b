# ToolRelay: slim, non-root, health-checked. Mount your config at /etc/toolrelay/config.yaml.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    TOOLRELAY_CONFIG=/etc/toolrelay/config.yaml

WORKDIR /srv/toolrelay
# The dependencies first, from pyproject.toml alone, in their own layer: a change to app/ (or
# the README) rebuilds only the layers below, never reinstalls them.
COPY pyproject.toml ./
RUN python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep=chr(10))" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt && rm /tmp/requirements.txt \
    && useradd --system --uid 10001 toolrelay
COPY README.md ./
COPY app ./app
RUN pip install --no-deps .
COPY config.yaml /etc/toolrelay/config.yaml

USER toolrelay
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["python", "-c", "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/health', timeout=2).status != 200)"]
CMD ["python", "-m", "app", "--host", "0.0.0.0", "--port", "8080"]
