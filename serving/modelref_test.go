package serving

import (
	"testing"

	"github.com/trainyard/trainyard"
)

func TestParseModelRef(t *testing.T) {
	t.Parallel()
	isBase := func(s string) bool { return s == "trainyard/tiny-chat" }
	ok := map[string]ModelRef{
		"trainyard/tiny-chat":                      {Base: "trainyard/tiny-chat"},
		"wandb-artifact:///acme/proj/agent":        {Entity: "acme", Project: "proj", Name: "agent"},
		"wandb-artifact:///acme/proj/agent:latest": {Entity: "acme", Project: "proj", Name: "agent"},
		"wandb-artifact:///acme/proj/agent:step12": {Entity: "acme", Project: "proj", Name: "agent", Step: 12, Pinned: true},
		"wandb-artifact:///acme/proj/agent:step0":  {Entity: "acme", Project: "proj", Name: "agent", Step: 0, Pinned: true},
		"acme/proj/agent:step3":                    {Entity: "acme", Project: "proj", Name: "agent", Step: 3, Pinned: true},
	}
	for in, want := range ok {
		got, err := ParseModelRef(in, isBase)
		if err != nil || got != want {
			t.Errorf("ParseModelRef(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "gpt-4o", "acme/agent", "wandb-artifact:///acme//agent",
		"wandb-artifact:///acme/proj/agent:v3", "wandb-artifact:///acme/proj/agent:step-1",
		"wandb-artifact:///acme/proj/agent:step+1", "wandb-artifact:///acme/proj/agent:stepx",
		"wandb-artifact:///a/b/c/d"} {
		_, err := ParseModelRef(in, isBase)
		if trainyard.ErrorCode(err) != trainyard.ENOTFOUND || trainyard.ErrorMessage(err) == "" {
			t.Errorf("ParseModelRef(%q) error = %v, want ENOTFOUND with a message", in, err)
		}
	}
}
