package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/trainyard/trainyard/examples/trainingapi"
)

// message is an OpenAI chat message with text content.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// question is one thing the data teaches: the conversation up to the last
// assistant turn, and that turn.
type question struct {
	Prompt []message
	Taught string
}

// quizOf asks, for every distinct answer the data teaches, the first
// conversation that teaches it.
func quizOf(data []byte) ([]question, error) {
	var quiz []question
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var conv struct {
			Messages []message `json:"messages"`
		}
		if err := json.Unmarshal(sc.Bytes(), &conv); err != nil {
			return nil, fmt.Errorf("data line %d: %w", line, err)
		}
		last := len(conv.Messages) - 1
		if last < 1 || conv.Messages[last].Role != "assistant" {
			return nil, fmt.Errorf("data line %d: the conversation must end with an assistant turn", line)
		}
		if taught := conv.Messages[last].Content; !seen[taught] {
			seen[taught] = true
			quiz = append(quiz, question{Prompt: conv.Messages[:last], Taught: taught})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(quiz) == 0 {
		return nil, fmt.Errorf("the data has no conversations")
	}
	return quiz, nil
}

// answer is how the base and the trained model answered one question.
type answer struct {
	Question     string `json:"question"`
	Taught       string `json:"taught"`
	Base         string `json:"base"`
	Tuned        string `json:"trained"`
	BaseCorrect  bool   `json:"base_correct"`
	TunedCorrect bool   `json:"trained_correct"`
}

// askAll asks both models every question, greedily (temperature 0), so the
// answers are the models' most likely ones.
func askAll(ctx context.Context, c *trainingapi.Client, quiz []question, baseModel, tuned string) ([]answer, error) {
	answers := make([]answer, len(quiz))
	errs := make([]error, 2*len(quiz))
	var wg sync.WaitGroup
	for i, q := range quiz {
		answers[i] = answer{Question: q.Prompt[len(q.Prompt)-1].Content, Taught: q.Taught}
		for j, m := range []string{baseModel, tuned} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				reply, err := ask(ctx, c, m, q.Prompt, len(q.Taught)+16)
				if j == 0 {
					answers[i].Base, answers[i].BaseCorrect = reply, reply == q.Taught
				} else {
					answers[i].Tuned, answers[i].TunedCorrect = reply, reply == q.Taught
				}
				errs[2*i+j] = err
			}()
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return answers, nil
}

// ask returns the model's reply, trimmed. tiny-chat's tokens are bytes, so
// maxTokens bounds the reply's length in bytes.
func ask(ctx context.Context, c *trainingapi.Client, model string, prompt []message, maxTokens int) (string, error) {
	var resp struct {
		Choices []struct {
			Message message `json:"message"`
		} `json:"choices"`
	}
	err := c.Do(ctx, http.MethodPost, "/chat/completions", map[string]any{
		"model": model, "messages": prompt, "temperature": 0, "max_tokens": maxTokens,
	}, &resp)
	if err != nil {
		return "", fmt.Errorf("ask %s: %w", model, err)
	}
	if len(resp.Choices) == 0 {
		return "", fmt.Errorf("ask %s: no choices", model)
	}
	return strings.TrimSpace(resp.Choices[0].Message.Content), nil
}
