// The Vercel AI SDK's tool loop against ToolRelay: `openai(model)` (the Responses API model) from
// `createOpenAI({baseURL, apiKey})`, with generateText and streamText, stopping after 3 steps.
// Usage: node tool_loop.mjs BASE_URL API_KEY MODEL (see setup.mjs). Prints one JSON object: each run's steps, final text, and the
// bodies it sent to /responses.
import {
  executed,
  generateText,
  model,
  openai,
  sent,
  stepCountIs,
  streamText,
  tools,
} from "./setup.mjs";

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
