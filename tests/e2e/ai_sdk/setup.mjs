// What the AI SDK scripts share: the SDK loaded from AI_SDK_MODULES (or a node_modules next to
// them), `openai` from `createOpenAI({baseURL, apiKey})` with a fetch that records every body
// sent to /responses (`sent`), and the get_weather tool, which records its calls (`executed`).
// Usage: import { ... } from "./setup.mjs" in a script run as `node SCRIPT BASE_URL API_KEY MODEL`.
import { createRequire } from "node:module";
import path from "node:path";

export const [baseURL, apiKey, model] = process.argv.slice(2);
const modules = process.env.AI_SDK_MODULES;
const require = createRequire(modules ? path.join(modules, "index.js") : import.meta.url);
export const { generateText, streamText, stepCountIs, tool, jsonSchema } = await import(
  require.resolve("ai")
);
const { createOpenAI } = await import(require.resolve("@ai-sdk/openai"));

export const sent = [];
const recordingFetch = async (url, init) => {
  if (String(url).endsWith("/responses") && init?.body) sent.push(JSON.parse(init.body));
  return fetch(url, init);
};
export const openai = createOpenAI({ baseURL, apiKey, fetch: recordingFetch });

export const executed = [];
export const tools = {
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
