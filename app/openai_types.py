"""The client-facing OpenAI Chat Completions shapes: a validated request model, and TypedDicts
for what we emit (plain dicts on the hot path, typed for mypy only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import orjson
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from app.errors import InvalidRequest
from app.json_depth import ParamStyle, check_body_depth, refuse_if_too_deep_to_parse

# ---------------------------------------------------------------------------------------------
# Request (validated once at the edge; unknown fields allowed so they reach openai upstreams)
# ---------------------------------------------------------------------------------------------

_OPEN = ConfigDict(extra="allow", strict=True)

TOOL_NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"


class TextPart(BaseModel):
    model_config = _OPEN
    type: Literal["text"]
    text: str


class ImageURL(BaseModel):
    model_config = _OPEN
    url: str
    detail: str | None = None


class ImagePart(BaseModel):
    model_config = _OPEN
    type: Literal["image_url"]
    image_url: ImageURL


class AudioPart(BaseModel):
    model_config = _OPEN
    type: Literal["input_audio"]
    input_audio: dict[str, Any]


class FilePart(BaseModel):
    model_config = _OPEN
    type: Literal["file"]
    file: dict[str, Any]


class RefusalPart(BaseModel):
    model_config = _OPEN
    type: Literal["refusal"]
    refusal: str


UserPart = Annotated[TextPart | ImagePart | AudioPart | FilePart, Field(discriminator="type")]
AssistantPart = Annotated[TextPart | RefusalPart, Field(discriminator="type")]


class FunctionCall(BaseModel):
    model_config = _OPEN
    name: str
    arguments: str


class ToolCall(BaseModel):
    model_config = _OPEN
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class SystemMessage(BaseModel):
    model_config = _OPEN
    role: Literal["system", "developer"]
    content: str | list[TextPart]
    name: str | None = None


class UserMessage(BaseModel):
    model_config = _OPEN
    role: Literal["user"]
    content: str | list[UserPart]
    name: str | None = None


class AssistantMessage(BaseModel):
    model_config = _OPEN
    role: Literal["assistant"]
    content: str | list[AssistantPart] | None = None
    tool_calls: list[ToolCall] | None = None
    refusal: str | None = None
    name: str | None = None
    reasoning_content: str | None = None
    thinking_blocks: list[dict[str, Any]] | None = None
    """Anthropic's thinking blocks as this proxy handed them out (CONTRACT.md, "Reasoning"),
    sent back so a tool loop with thinking on can go on."""


class ToolMessage(BaseModel):
    model_config = _OPEN
    role: Literal["tool"]
    tool_call_id: str
    content: str | list[TextPart]


class FunctionMessage(BaseModel):
    """Legacy `functions` API result; passed through to openai upstreams only."""

    model_config = _OPEN
    role: Literal["function"]
    name: str
    content: str | None


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage | FunctionMessage,
    Field(discriminator="role"),
]


class FunctionDefinition(BaseModel):
    model_config = _OPEN
    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(BaseModel):
    model_config = _OPEN
    type: Literal["function"]
    function: FunctionDefinition


class NamedFunction(BaseModel):
    model_config = _OPEN
    name: str


class NamedToolChoice(BaseModel):
    model_config = _OPEN
    type: Literal["function"]
    function: NamedFunction


ToolChoice = Literal["none", "auto", "required"] | NamedToolChoice


class StreamOptions(BaseModel):
    model_config = _OPEN
    include_usage: bool | None = None


@dataclass(frozen=True, slots=True)
class ClaudeAsked:
    """A Messages request's `anthropic-beta` values and `thinking` / `output_config.effort` as
    sent: chat has no place for them, and a translated Claude kind sends them as Claude takes
    them (the exact thinking budget, not the effort's)."""

    betas: tuple[str, ...] = ()
    thinking: dict[str, Any] | None = None
    effort: str | None = None


class ChatRequest(BaseModel):
    """A chat completion request, validated once; `wire` keeps the client's JSON as sent so
    passthrough upstreams get every field (known or not) without a re-serialisation."""

    model_config = _OPEN

    model: str = Field(min_length=1)
    messages: list[Message] = Field(min_length=1)
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = None
    top_p: float | None = None
    stop: str | list[str] | None = None
    n: int | None = Field(default=None, ge=1)
    user: str | None = None

    _wire: dict[str, Any] = PrivateAttr(default_factory=dict)
    _claude: ClaudeAsked | None = PrivateAttr(default=None)

    @property
    def wire(self) -> dict[str, Any]:
        """The request body exactly as the client sent it (do not mutate: copy first). Read
        from the private store itself: `self._wire` goes through pydantic's `__getattr__`,
        which with `extra="allow"` first raises and catches a KeyError (~8 us a read against
        0.1 us; the translators read it on every request)."""
        wire: dict[str, Any] = self.__pydantic_private__["_wire"]  # type: ignore[index]
        return wire

    @property
    def claude(self) -> ClaudeAsked | None:
        """What a Messages client asked of Claude beyond the chat request, for a translated
        Claude kind (bedrock); None from every other face."""
        claude: ClaudeAsked | None = self.__pydantic_private__["_claude"]  # type: ignore[index]
        return claude

    @property
    def include_usage(self) -> bool:
        return bool(self.stream and self.stream_options and self.stream_options.include_usage)

    @property
    def output_limit(self) -> int | None:
        """The client's cap on generated tokens; `max_completion_tokens` wins over the
        deprecated `max_tokens` when both are sent (as OpenAI documents)."""
        if self.max_completion_tokens is not None:
            return self.max_completion_tokens
        return self.max_tokens


def parse_chat_request(body: bytes) -> ChatRequest:
    """Bytes from the client -> a validated request, or a 400 naming what is wrong."""
    return chat_request_from_wire(decode_request_body(body, param_style="openai"))


def decode_request_body(body: bytes, *, param_style: ParamStyle = "dotted") -> dict[str, Any]:
    """A client's JSON object body, or a 400 (every client-facing API takes one). A body nested
    deeper than app.json_depth.MAX_JSON_DEPTH is refused here, for every face and kind, with
    the place named in `param_style`: the Messages API's `messages.0.content` by default,
    OpenAI's `messages[0].content` for the OpenAI faces."""
    try:
        wire = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        refuse_if_too_deep_to_parse(body, exc, param_style)
        raise InvalidRequest(f"The request body is not valid JSON: {exc}") from None
    if not isinstance(wire, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    check_body_depth(body, wire, param_style)
    return wire


def chat_request_from_wire(wire: dict[str, Any]) -> ChatRequest:
    """A decoded request body -> a validated request (which keeps `wire` as its `wire`), or a
    400 naming what is wrong. The Anthropic face builds its chat requests through here too."""
    try:
        request = ChatRequest.model_validate(wire)
    except ValidationError as exc:
        raise _invalid_request(exc) from None
    request._wire = wire
    _check_tool_choice(request)
    if request.model_extra:
        _check_known_fields(request.model_extra)
    return request


# OpenAI request fields ChatRequest leaves undeclared (so they stay in `model_extra`, which the
# translated kinds screen by value, and reach openai upstreams as sent), with the JSON type
# OpenAI's API takes. A wrong type is a 400 here for every kind, as OpenAI itself answers,
# instead of being relayed. null is always accepted: it means unset.
_NUMBER = (int, float)
_OBJECT = (dict,)
_STRING = (str,)
KNOWN_FIELD_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "frequency_penalty": (_NUMBER, "a number"),
    "presence_penalty": (_NUMBER, "a number"),
    "seed": ((int,), "an integer"),
    "top_k": ((int,), "an integer"),
    "top_logprobs": ((int,), "an integer"),
    "logprobs": ((bool,), "a boolean"),
    "store": ((bool,), "a boolean"),
    "logit_bias": (_OBJECT, "an object"),
    "metadata": (_OBJECT, "an object"),
    "response_format": (_OBJECT, "an object"),
    "audio": (_OBJECT, "an object"),
    "prediction": (_OBJECT, "an object"),
    "web_search_options": (_OBJECT, "an object"),
    "modalities": ((list,), "an array"),
    "functions": ((list,), "an array"),
    "function_call": ((str, dict), "a string or an object"),
    "reasoning_effort": (_STRING, "a string"),
    "verbosity": (_STRING, "a string"),
    "service_tier": (_STRING, "a string"),
    "safety_identifier": (_STRING, "a string"),
    "prompt_cache_key": (_STRING, "a string"),
    "prompt_cache_retention": (_STRING, "a string"),
}


def _check_known_fields(extra: dict[str, Any]) -> None:
    for field, value in extra.items():
        expected = KNOWN_FIELD_TYPES.get(field)
        if expected is None or value is None:
            continue
        types, name = expected
        # bool is an int in Python, never in JSON: `seed: true` is not an integer.
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            raise InvalidRequest(f"Invalid type for '{field}': expected {name}.", param=field)


def _invalid_request(exc: ValidationError) -> InvalidRequest:
    errors = exc.errors(include_url=False)
    # Of a union's failed branches, the deepest error is the one that names the real problem.
    error = max(errors, key=lambda e: len(e["loc"]))
    param = _param_path(error["loc"])
    more = len(errors) - 1
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    return InvalidRequest(f"Invalid value for '{param}': {error['msg']}{suffix}", param=param)


_TAGGED_LISTS = frozenset({"messages", "content"})


def _param_path(loc: tuple[int | str, ...]) -> str:
    """pydantic's error location -> OpenAI's `param` style, e.g. `messages[2].content`.

    pydantic inserts union branch names (a message's role tag, `str`, `list[...]`) that the
    client never wrote; they are dropped.
    """
    path = ""
    for position, part in enumerate(loc):
        if isinstance(part, int):
            path += f"[{part}]"
            continue
        owner = loc[position - 2] if position >= 2 else None
        tagged = isinstance(loc[position - 1], int) and (
            owner in _TAGGED_LISTS or (isinstance(owner, str) and "[" in owner)
        )
        if tagged or part == "str" or "[" in part:
            continue
        path += f".{part}" if path else part
    return path or "body"


REQUIRED_WITHOUT_TOOLS = (
    "tool_choice forces a tool call but the request has no tools: offer tools, or leave "
    "tool_choice out."
)
"""Every face's 400 for a forced choice with nothing to choose (OpenAI's and Anthropic's
APIs refuse it too), in words that fit each: chat's and Responses' `required`, Messages'
`any`."""


def _check_tool_choice(request: ChatRequest) -> None:
    choice = request.tool_choice
    if isinstance(choice, NamedToolChoice):
        names = {tool.function.name for tool in request.tools or ()}
        if choice.function.name not in names:
            raise InvalidRequest(
                f"tool_choice names the function '{choice.function.name}', "
                "which is not among the request's tools.",
                param="tool_choice",
            )
    elif choice == "required" and not request.tools:
        raise InvalidRequest(REQUIRED_WITHOUT_TOOLS, param="tool_choice")


# ---------------------------------------------------------------------------------------------
# What we emit (plain dicts; these TypedDicts exist for the type checker only)
# ---------------------------------------------------------------------------------------------

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "function_call"]


class FunctionCallOut(TypedDict):
    name: str
    arguments: str


class ToolCallOut(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionCallOut


class PromptTokensDetails(TypedDict, total=False):
    cached_tokens: int


class CompletionTokensDetails(TypedDict, total=False):
    reasoning_tokens: int


class Usage(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: NotRequired[PromptTokensDetails]
    completion_tokens_details: NotRequired[CompletionTokensDetails]


class ResponseMessage(TypedDict):
    role: Literal["assistant"]
    content: str | None
    tool_calls: NotRequired[list[ToolCallOut]]
    reasoning_content: NotRequired[str]
    thinking_blocks: NotRequired[list[dict[str, Any]]]
    refusal: NotRequired[str | None]


class Choice(TypedDict):
    index: int
    message: ResponseMessage
    finish_reason: FinishReason | None
    logprobs: NotRequired[None]


class ChatCompletion(TypedDict):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[Choice]
    usage: NotRequired[Usage | None]


class ChunkChoice(TypedDict):
    index: int
    delta: dict[str, Any]
    finish_reason: FinishReason | None
    logprobs: NotRequired[None]


class ChatCompletionChunk(TypedDict):
    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: NotRequired[Usage | None]
