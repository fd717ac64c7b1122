package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/trainyard/trainyard/serving"
	"github.com/trainyard/trainyard/serving/servingtest"
)

func weatherTools() []openai.ChatCompletionToolUnionParam {
	return []openai.ChatCompletionToolUnionParam{
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather",
			Description: openai.String("Current weather of a city"),
			Parameters: shared.FunctionParameters{"type": "object",
				"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}),
		openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time"}),
	}
}

func TestChatToolCalls(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, serving.Config{})
	ctx := context.Background()
	p := params(servingtest.BaseModel)
	p.Tools, p.MaxTokens, p.N = weatherTools(), openai.Int(60), openai.Int(2)
	p.Messages = append(p.Messages, openai.AssistantMessage("Checking."), openai.ToolMessage(`{"temp":21}`, "call_1"))
	for _, choice := range []openai.ChatCompletionToolChoiceOptionUnionParam{
		{OfAuto: openai.String("required")},
		openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_time"}),
	} {
		p.ToolChoice = choice
		res, err := e.client.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range res.Choices {
			if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 {
				t.Fatalf("choice %+v, want one tool call", c)
			}
			call := c.Message.ToolCalls[0]
			name := call.Function.Name
			if (name != "get_weather" && name != "get_time") || (choice.OfFunctionToolChoice != nil && name != "get_time") {
				t.Fatalf("called %q", name)
			}
			if !json.Valid([]byte(call.Function.Arguments)) || !strings.HasPrefix(call.ID, "call_") || call.Type != "function" {
				t.Fatalf("call %+v", call)
			}
		}
	}

	// Streamed, the call arrives as a tool_calls delta the SDK accumulates.
	stream := e.client.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if c := acc.Choices[0]; c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].Function.Name != "get_time" {
		t.Fatalf("streamed choice %+v", c)
	}
}

func TestChatJSONObject(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, serving.Config{})
	p := params(servingtest.BaseModel)
	p.MaxTokens, p.N = openai.Int(40), openai.Int(3)
	p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	res, err := e.client.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Choices {
		var v map[string]any
		if err := json.Unmarshal([]byte(c.Message.Content), &v); err != nil || c.FinishReason != "stop" {
			t.Fatalf("content %q (%s) is not a JSON object: %v", c.Message.Content, c.FinishReason, err)
		}
	}
}
