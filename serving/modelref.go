package serving

import (
	"strconv"
	"strings"

	"github.com/trainyard/trainyard"
)

// ArtifactScheme prefixes the chat completions name of a trained model:
// wandb-artifact:///ENTITY/PROJECT/NAME[:stepN|:latest].
const ArtifactScheme = "wandb-artifact:///"

// ModelRef is a parsed chat completions model name: either a base model or a trained model, optionally
// pinned to a step.
type ModelRef struct {
	// Base is set when the name is a base model; the other fields are then empty.
	Base string
	// Entity, Project and Name identify a trained model.
	Entity, Project, Name string
	// Step pins a checkpoint when Pinned; step 0 is the base model itself (no adapter).
	Step   int
	Pinned bool
}

// ParseModelRef parses a model name. isBase reports the base model names this server serves. Besides
// ArtifactScheme names, the plain ENTITY/PROJECT/NAME[:alias] form is accepted (three non-empty segments,
// so it never collides with a two-segment base name such as "trainyard/tiny-chat"). Accepted aliases are
// "latest" (the default) and "stepN"; anything else is ENOTFOUND with a message saying why.
func ParseModelRef(name string, isBase func(string) bool) (ModelRef, error) {
	if name == "" {
		return ModelRef{}, trainyard.Errorf(trainyard.ENOTFOUND, "The model name is empty.")
	}
	if isBase(name) {
		return ModelRef{Base: name}, nil
	}
	path := strings.TrimPrefix(name, ArtifactScheme)
	alias := ""
	if i := strings.LastIndexByte(path, ':'); i >= 0 {
		path, alias = path[:i], path[i+1:]
	}
	segs := strings.Split(path, "/")
	if len(segs) != 3 || !nameSegment(segs[0]) || !nameSegment(segs[1]) || !nameSegment(segs[2]) {
		return ModelRef{}, trainyard.Errorf(trainyard.ENOTFOUND,
			"The model `%s` does not exist: expected a base model or %sENTITY/PROJECT/NAME[:stepN].", name, ArtifactScheme)
	}
	ref := ModelRef{Entity: segs[0], Project: segs[1], Name: segs[2]}
	switch {
	case alias == "" || alias == "latest":
	case strings.HasPrefix(alias, "step"):
		n, err := strconv.Atoi(alias[len("step"):])
		if err != nil || n < 0 || strings.HasPrefix(alias, "step+") {
			return ModelRef{}, trainyard.Errorf(trainyard.ENOTFOUND,
				"The model `%s` does not exist: %q is not a step (use :stepN or :latest).", name, alias)
		}
		ref.Step, ref.Pinned = n, true
	default:
		return ModelRef{}, trainyard.Errorf(trainyard.ENOTFOUND,
			"The model `%s` does not exist: unknown version %q (use :stepN or :latest).", name, alias)
	}
	return ref, nil
}

// String writes the canonical artifact name of a trained model reference (without the alias).
func (r ModelRef) String() string {
	if r.Base != "" {
		return r.Base
	}
	return ArtifactScheme + r.Entity + "/" + r.Project + "/" + r.Name
}

// nameSegment reports whether s can be an entity, project or model name:
// non-empty, without the characters that separate a name's parts (':' before
// an alias) or that names never hold.
func nameSegment(s string) bool {
	return s != "" && !strings.ContainsAny(s, ":#?%\\ \t\r\n")
}
