package pretrain

import (
	"encoding/json"
	"fmt"
	"math/rand"

	"github.com/trainyard/trainyard/engine/chat"
)

// toolSpec is a function tool of the synthetic tool-use task: its definition, a way to draw a request with
// the arguments it implies, and a way to answer from a simulated result.
type toolSpec struct {
	def     chat.Tool
	request func(r *rand.Rand) (user string, args map[string]any)
	result  func(r *rand.Rand, args map[string]any) (tool, answer string)
}

func schema(required []string, props map[string]string) json.RawMessage {
	p := map[string]any{}
	for k, v := range props {
		p[k] = map[string]any{"type": v}
	}
	js, _ := json.Marshal(map[string]any{"type": "object", "properties": p, "required": required})
	return js
}

var toolCatalog = []toolSpec{
	{def: chat.Tool{Name: "get_weather", Description: "Get the current weather for a city.", Parameters: schema([]string{"city"}, map[string]string{"city": "string"})},
		request: func(r *rand.Rand) (string, map[string]any) {
			c := pick(r, cities)
			return fmt.Sprintf(pick(r, []string{"What's the weather in %s?", "Is it raining in %s?", "How warm is it in %s today?"}), c), map[string]any{"city": c}
		},
		result: func(r *rand.Rand, a map[string]any) (string, string) {
			t, cond := r.Intn(35)-5, pick(r, conditions)
			return fmt.Sprintf(`{"city":%q,"temperature":%d,"condition":%q}`, a["city"], t, cond),
				fmt.Sprintf("It is %d degrees and %s in %s.", t, cond, a["city"])
		}},
	{def: chat.Tool{Name: "get_time", Description: "Get the local time in a city.", Parameters: schema([]string{"city"}, map[string]string{"city": "string"})},
		request: func(r *rand.Rand) (string, map[string]any) {
			c := pick(r, cities)
			return fmt.Sprintf(pick(r, []string{"What time is it in %s?", "Tell me the time in %s."}), c), map[string]any{"city": c}
		},
		result: func(r *rand.Rand, a map[string]any) (string, string) {
			tm := fmt.Sprintf("%02d:%02d", r.Intn(24), r.Intn(60))
			return fmt.Sprintf(`{"time":%q}`, tm), fmt.Sprintf("It is %s in %s.", tm, a["city"])
		}},
	{def: chat.Tool{Name: "calculator", Description: "Evaluate an arithmetic expression.", Parameters: schema([]string{"expression"}, map[string]string{"expression": "string"})},
		request: func(r *rand.Rand) (string, map[string]any) {
			e := fmt.Sprintf("%d*%d", 10+r.Intn(90), 10+r.Intn(90))
			return fmt.Sprintf(pick(r, []string{"Use the calculator to compute %s.", "Please calculate %s.", "What is %s? Use a tool."}), e), map[string]any{"expression": e}
		},
		result: func(r *rand.Rand, a map[string]any) (string, string) {
			var x, y int
			fmt.Sscanf(a["expression"].(string), "%d*%d", &x, &y)
			return fmt.Sprint(x * y), fmt.Sprintf("%s = %d.", a["expression"], x*y)
		}},
	{def: chat.Tool{Name: "search_web", Description: "Search the web and return the top result.", Parameters: schema([]string{"query"}, map[string]string{"query": "string"})},
		request: func(r *rand.Rand) (string, map[string]any) {
			q := pick(r, searchTopics)
			return fmt.Sprintf(pick(r, []string{"Search the web for %s.", "Look up %s.", "Can you find information about %s?"}), q), map[string]any{"query": q}
		},
		result: func(r *rand.Rand, a map[string]any) (string, string) {
			return fmt.Sprintf(`{"title":"About %s","snippet":"A short article."}`, a["query"]),
				fmt.Sprintf("I found an article about %s.", a["query"])
		}},
	{def: chat.Tool{Name: "send_email", Description: "Send an email.", Parameters: schema([]string{"to", "subject"}, map[string]string{"to": "string", "subject": "string"})},
		request: func(r *rand.Rand) (string, map[string]any) {
			to, subj := pick(r, people)+"@example.com", pick(r, nouns)
			return fmt.Sprintf("Send an email to %s with the subject %s.", to, subj), map[string]any{"to": to, "subject": subj}
		},
		result: func(r *rand.Rand, a map[string]any) (string, string) {
			return `{"status":"sent"}`, fmt.Sprintf("Done! I sent the email to %s.", a["to"])
		}},
	{def: chat.Tool{Name: "get_stock_price", Description: "Get the latest price of a stock.", Parameters: schema([]string{"symbol"}, map[string]string{"symbol": "string"})},
		request: func(r *rand.Rand) (string, map[string]any) {
			s := pick(r, stockSymbols)
			return fmt.Sprintf(pick(r, []string{"What is the stock price of %s?", "How much is %s trading at?"}), s), map[string]any{"symbol": s}
		},
		result: func(r *rand.Rand, a map[string]any) (string, string) {
			p := 20 + r.Intn(400)
			return fmt.Sprintf(`{"symbol":%q,"price":%d}`, a["symbol"], p), fmt.Sprintf("%s is trading at %d dollars.", a["symbol"], p)
		}},
	{def: chat.Tool{Name: "translate", Description: "Translate text into another language.", Parameters: schema([]string{"text", "language"}, map[string]string{"text": "string", "language": "string"})},
		request: func(r *rand.Rand) (string, map[string]any) {
			t, l := pick(r, []string{"hello", "thank you", "good night", "I like tea"}), pick(r, languages)
			return fmt.Sprintf("Translate %q into %s.", t, l), map[string]any{"text": t, "language": l}
		},
		result: func(r *rand.Rand, a map[string]any) (string, string) {
			return `{"translation":"..."}`, fmt.Sprintf("Here is %q in %s: ...", a["text"], a["language"])
		}},
	{def: chat.Tool{Name: "set_reminder", Description: "Set a reminder.", Parameters: schema([]string{"text", "time"}, map[string]string{"text": "string", "time": "string"})},
		request: func(r *rand.Rand) (string, map[string]any) {
			t, tm := pick(r, reminderTexts), fmt.Sprintf("%d pm", 1+r.Intn(11))
			return fmt.Sprintf("Remind me to %s at %s.", t, tm), map[string]any{"text": t, "time": tm}
		},
		result: func(r *rand.Rand, a map[string]any) (string, string) {
			return `{"status":"ok"}`, fmt.Sprintf("I will remind you to %s at %s.", a["text"], a["time"])
		}},
}

// toolUse draws a tool-use conversation: 1-3 tools on offer, a request for one of them answered with a
// tool call (and, in half of the cases, the tool's result and a final answer); or small talk that needs no
// tool; or a tool request without tools, which the assistant declines.
func toolUse(r *rand.Rand) ([]chat.Message, []chat.Tool) {
	perm := r.Perm(len(toolCatalog))[:1+r.Intn(3)]
	var tools []chat.Tool
	for _, i := range perm {
		tools = append(tools, toolCatalog[i].def)
	}
	var msgs []chat.Message
	if r.Intn(3) == 0 {
		msgs = append(msgs, chat.Message{Role: "system", Content: pick(r, systemPrompts)})
	}
	switch k := r.Intn(10); {
	case k == 0: // a question no offered tool answers
		x := smallTalk(r)
		return append(msgs, chat.Message{Role: "user", Content: x.user}, chat.Message{Role: "assistant", Content: x.assistant, Trainable: true}), tools
	case k == 1: // a tool request without tools
		spec := toolCatalog[perm[0]]
		u, _ := spec.request(r)
		return append(msgs, chat.Message{Role: "user", Content: u},
			chat.Message{Role: "assistant", Content: "Sorry, I can't do that without a tool for it.", Trainable: true}), nil
	}
	spec := toolCatalog[perm[r.Intn(len(perm))]]
	u, args := spec.request(r)
	argJSON, _ := json.Marshal(args)
	call := chat.ToolCall{ID: "call_0", Name: spec.def.Name, Arguments: string(argJSON)}
	msgs = append(msgs, chat.Message{Role: "user", Content: u},
		chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{call}, Trainable: true})
	if r.Intn(2) == 0 {
		res, answer := spec.result(r, args)
		msgs = append(msgs, chat.Message{Role: "tool", Content: res, ToolCallID: "call_0"},
			chat.Message{Role: "assistant", Content: answer, Trainable: true})
	}
	return msgs, tools
}
