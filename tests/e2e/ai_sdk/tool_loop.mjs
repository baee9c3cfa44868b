// The Vercel AI SDK's tool loop against ToolRelay: `openai(model)` (the Responses API model) from
// `createOpenAI({baseURL, apiKey})`, with generateText and streamText, stopping after 3 steps.
// Usage: node tool_loop.mjs BASE_URL API_KEY MODEL; NODE_PATH (or a node_modules next to it)
// finds `ai` and `@ai-sdk/openai`. Prints one JSON object: each run's steps, final text, and the
// bodies it sent to /responses.
import { createRequire } from "node:module";
import path from "node:path";

const [baseURL, apiKey, model] = process.argv.slice(2);
const modules = process.env.AI_SDK_MODULES;
const require = createRequire(modules ? path.join(modules, "index.js") : import.meta.url);
const { generateText, streamText, stepCountIs, tool, jsonSchema } = await import(
  require.resolve("ai")
);
const { createOpenAI } = await import(require.resolve("@ai-sdk/openai"));

const sent = [];
const recordingFetch = async (url, init) => {
  if (String(url).endsWith("/responses") && init?.body) sent.push(JSON.parse(init.body));
  return fetch(url, init);
};
const openai = createOpenAI({ baseURL, apiKey, fetch: recordingFetch });

const executed = [];
const tools = {
  get_weather: tool({
    description: "Current weather in a city.",
    inputSchema: jsonSchema({
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false,
    }),
    execute: async ({ city }) => {
      executed.push({ city });
      return { city, forecast: "sunny, 21 C" };
    },
  }),
};

function summary(steps) {
  return steps.map((step) => ({
    finishReason: step.finishReason,
    text: step.text,
    toolCalls: step.toolCalls.map((c) => ({ id: c.toolCallId, name: c.toolName, input: c.input })),
    toolResults: step.toolResults.map((r) => ({ id: r.toolCallId, output: r.output })),
  }));
}

const runs = [];
for (const store of [undefined, false]) {
  const options = {
    model: openai(model),
    tools,
    prompt: "What is the weather in Paris?",
    stopWhen: stepCountIs(3),
    ...(store === undefined ? {} : { providerOptions: { openai: { store } } }),
  };
  for (const mode of ["generateText", "streamText"]) {
    const before = sent.length;
    executed.length = 0;
    let result;
    if (mode === "generateText") {
      const answer = await generateText(options);
      result = { text: answer.text, finishReason: answer.finishReason, steps: summary(answer.steps) };
    } else {
      const errors = [];
      const answer = streamText({ ...options, onError: ({ error }) => errors.push(String(error)) });
      let streamed = "";
      for await (const delta of answer.textStream) streamed += delta;
      result = {
        text: await answer.text,
        streamed,
        errors,
        finishReason: await answer.finishReason,
        steps: summary(await answer.steps),
      };
    }
    runs.push({ mode, store: store ?? null, executed: [...executed], sent: sent.slice(before), ...result });
  }
}
console.log(JSON.stringify({ runs }));
