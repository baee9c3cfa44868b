// The Vercel AI SDK holding a chat against ToolRelay, as its docs show: every turn sends the
// whole conversation so far (`messages`, grown by each turn's `responseMessages`, every step's), with
// `openai(model)` (the Responses API model) from `createOpenAI({baseURL, apiKey})`, each turn a
// tool loop of at most 3 steps. Three turns (a tool turn, another tool turn, a text turn) with
// generateText and streamText, `store` left as is and false.
// Usage: node chat.mjs BASE_URL API_KEY MODEL (see setup.mjs). Prints one JSON object: each
// chat's turns (steps, text, the bodies sent to /responses).
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

const QUESTIONS = ["What is the weather in Paris?", "And in Berlin?", "Thanks!"];

function summary(steps) {
  return steps.map((step) => ({
    finishReason: step.finishReason,
    text: step.text,
    toolCalls: step.toolCalls.map((c) => ({ id: c.toolCallId, name: c.toolName, input: c.input })),
  }));
}

async function turn(mode, options) {
  if (mode === "generateText") {
    const answer = await generateText(options);
    return { text: answer.text, steps: summary(answer.steps), messages: answer.responseMessages };
  }
  const errors = [];
  const answer = streamText({ ...options, onError: ({ error }) => errors.push(String(error)) });
  let streamed = "";
  for await (const delta of answer.textStream) streamed += delta;
  return {
    text: await answer.text,
    streamed,
    errors,
    steps: summary(await answer.steps),
    messages: await answer.responseMessages,
  };
}

const chats = [];
for (const store of [undefined, false]) {
  for (const mode of ["generateText", "streamText"]) {
    const messages = [];
    const turns = [];
    for (const question of QUESTIONS) {
      messages.push({ role: "user", content: question });
      const before = sent.length;
      executed.length = 0;
      let result;
      try {
        result = await turn(mode, {
          model: openai(model),
          tools,
          messages,
          stopWhen: stepCountIs(3),
          ...(store === undefined ? {} : { providerOptions: { openai: { store } } }),
        });
      } catch (error) {
        turns.push({ question, failed: String(error), sent: sent.slice(before) });
        break;
      }
      messages.push(...result.messages);
      const { messages: _, ...kept } = result;
      turns.push({ question, executed: [...executed], sent: sent.slice(before), ...kept });
    }
    chats.push({ mode, store: store ?? null, turns });
  }
}
console.log(JSON.stringify({ chats }));
