package hftemplate

import (
	"fmt"
	"io"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// The environment reproduces the one transformers builds for apply_chat_template:
// ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker,
// loopcontrols]) with its own tojson filter and the raise_exception and strftime_now globals. It is built
// once from copies of gonja's builtins (gonja's package-level sets stay untouched) and shared by every
// template; the per-render globals live in the render's own context.

// maxRange bounds range(), as Jinja's sandbox does (MAX_RANGE).
const maxRange = 100_000

// controlStructureNames are the statements HF's environment knows. include/import/extends/from have no
// loader there, and "do" and "trans" are extensions HF does not load.
var controlStructureNames = []string{"autoescape", "block", "call", "filter", "for", "if", "macro", "raw",
	"set", "with", "break", "continue"}

var environment = newEnvironment()

func newEnvironment() *exec.Environment {
	filters := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	for name, fn := range map[string]exec.FilterFunction{
		"tojson": filterToJSON,
		"trim":   filterTrim,
		"items":  filterItems,
	} {
		if err := filters.Replace(name, fn); err != nil {
			panic(err) // gonja changed: the build would be wrong, not just a template
		}
	}
	statements := map[string]parser.ControlStructureParser{"generation": generationParser}
	for _, name := range controlStructureNames {
		p, ok := builtins.ControlStructures.Get(name)
		if !ok {
			panic(fmt.Sprintf("gonja has no %q statement", name))
		}
		statements[name] = p
	}
	globals := exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables)
	globals.Set("range", rangeFunction)
	return &exec.Environment{
		Context:           globals,
		Filters:           filters,
		Tests:             exec.NewTestSet(map[string]exec.TestFunction{}).Update(builtins.Tests),
		ControlStructures: exec.NewControlStructureSet(statements),
		Methods: exec.Methods{
			Bool:  builtins.Methods.Bool,
			Int:   builtins.Methods.Int,
			Float: builtins.Methods.Float,
			Str:   strMethods(),
			Dict:  dictMethods(),
			// list.append/reverse mutate: the immutable sandbox has only copy.
			List: listMethods(),
		},
	}
}

func newConfig() *config.Config {
	c := config.New()
	c.TrimBlocks = true
	c.LeftStripBlocks = true
	return c
}

// rangeFunction is Python's range(stop) / range(start, stop[, step]) as a list, bounded like the
// sandbox's (gonja's own feeds a channel from a goroutine that leaks when a loop breaks early).
func rangeFunction(_ *exec.Evaluator, params *exec.VarArgs) ([]any, error) {
	var ints []int
	for _, a := range params.Args {
		if !a.IsInteger() {
			return nil, fmt.Errorf("range() arguments must be integers")
		}
		ints = append(ints, a.Integer())
	}
	start, stop, step := 0, 0, 1
	switch len(ints) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return nil, fmt.Errorf("range() takes 1 to 3 integers")
	}
	if step == 0 {
		return nil, fmt.Errorf("range() step must not be zero")
	}
	n := 0
	if step > 0 && stop > start {
		n = (stop - start + step - 1) / step
	} else if step < 0 && start > stop {
		n = (start - stop - step - 1) / -step
	}
	if n > maxRange {
		return nil, fmt.Errorf("range too big (%d items, the limit is %d)", n, maxRange)
	}
	out := make([]any, n)
	for i := range out {
		out[i] = start + i*step
	}
	return out, nil
}

// generationStatement is HF's {% generation %}...{% endgeneration %} (AssistantTracker): it marks
// assistant output for return_assistant_tokens_mask and otherwise renders its body.
type generationStatement struct {
	location *tokens.Token
	body     *nodes.Wrapper
}

func (g *generationStatement) Position() *tokens.Token { return g.location }

func (g *generationStatement) String() string {
	return fmt.Sprintf("generation(Line=%d Col=%d)", g.location.Line, g.location.Col)
}

func (g *generationStatement) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	marks, _ := r.Environment.Context.Get(generationMarksVar)
	if marks != true {
		return r.Inherit().ExecuteWrapper(g.body)
	}
	if _, err := io.WriteString(r.Output, generationOpen); err != nil {
		return err
	}
	if err := r.Inherit().ExecuteWrapper(g.body); err != nil {
		return err
	}
	_, err := io.WriteString(r.Output, generationClose)
	return err
}

func generationParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	g := &generationStatement{location: p.Current()}
	body, end, err := p.WrapUntil("endgeneration")
	if err != nil {
		return nil, err
	}
	if !args.End() || !end.End() {
		return nil, fmt.Errorf("generation takes no arguments")
	}
	g.body = body
	return g, nil
}
