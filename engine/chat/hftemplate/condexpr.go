package hftemplate

import (
	"fmt"
	"strings"

	"github.com/nikolalohinski/gonja/v2/tokens"
)

// Jinja accepts a conditional expression (x if c else y) wherever an expression goes; gonja parses one
// only as the whole of a {{ }} output or of a {% set %} value, so Gemma 3's
// {{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "") }} does not parse.
// hoistConditionals rewrites such a parenthesised conditional into a {% set %} placed right before the
// tag that holds it, and the parentheses then hold the variable:
//
//	{{ a + (b if c else d) }}  →  {%+ set __cond0 = b if c else d %}{{ a + (__cond0) }}
//
// The set evaluates the conditional lazily as Jinja does, just before the tag (nothing runs between
// them), and the whitespace control of the original tag moves to the set, so the output is unchanged:
// a {{ }} tag gets {%+ (no lstrip_blocks, which never applies to outputs), a {% %} tag a plain {% that
// strips the line's indentation as the tag itself did, and a leading "-" moves to the set. Only outputs
// and if/set tags are rewritten; an elif, for or macro tag cannot have a statement before it evaluated
// at the same point, and keeps gonja's parse error.
func hoistConditionals(source string) string {
	source = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(source) // token positions as gonja's lexer counts them
	for n := 0; n < maxHoisted; n++ {
		rewritten, ok := hoistOne(source, n)
		if !ok {
			break
		}
		source = rewritten
	}
	return source
}

// maxHoisted bounds the rewrites of one template (the templates met hold one or two).
const maxHoisted = 64

// hoistOne rewrites the first innermost parenthesised conditional of an output or if/set tag, naming
// its variable __cond<n>.
func hoistOne(source string, n int) (string, bool) {
	stream := tokens.LexAll(source, newConfig())
	var (
		tag     *tokens.Token // the {{ or {% of the tag being scanned, nil outside tags
		keyword string        // a block tag's statement name
		parens  []int         // positions just after the open parentheses
		hasIf   []bool        // whether the group at that depth holds an "if" of its own
		hasElse []bool        // and an "else"
	)
	for !stream.End() {
		tok := stream.Next()
		switch tok.Type {
		case tokens.VariableBegin, tokens.BlockBegin:
			tag, keyword, parens, hasIf, hasElse = tok, "", nil, nil, nil
			if tok.Type == tokens.BlockBegin && stream.Current().Type == tokens.Name {
				keyword = stream.Current().Val
			}
		case tokens.VariableEnd, tokens.BlockEnd:
			tag = nil
		case tokens.LeftParenthesis:
			if tag != nil {
				parens, hasIf, hasElse = append(parens, tok.Pos+len(tok.Val)), append(hasIf, false), append(hasElse, false)
			}
		case tokens.Name:
			if tag != nil && len(parens) > 0 {
				hasIf[len(hasIf)-1] = hasIf[len(hasIf)-1] || tok.Val == "if"
				hasElse[len(hasElse)-1] = hasElse[len(hasElse)-1] || tok.Val == "else"
			}
		case tokens.RightParenthesis:
			if tag == nil || len(parens) == 0 {
				continue
			}
			d := len(parens) - 1
			open, cond, alt := parens[d], hasIf[d], hasElse[d]
			parens, hasIf, hasElse = parens[:d], hasIf[:d], hasElse[:d]
			if !cond || (tag.Type == tokens.BlockBegin && keyword != "if" && keyword != "set") {
				continue
			}
			return hoist(source, tag, open, tok.Pos, fmt.Sprintf("__cond%d", n), alt), true
		}
	}
	return source, false
}

// hoist moves source[open:close], a conditional expression inside the tag that starts at tag, into a
// {% set name = ... %} before that tag. Without an else, Jinja's value is undefined when the condition
// is false, and gonja's set needs an else: it gets a name that is never set.
func hoist(source string, tag *tokens.Token, open, close int, name string, hasElse bool) string {
	start := tag.Pos
	body := start + 2 // after {{ or {%
	opening := "{%"
	switch {
	case body < len(source) && source[body] == '-':
		opening = "{%-"
		body++ // the set strips the whitespace before it; the tag, right after the set, has none
	case body < len(source) && source[body] == '+':
		opening = "{%+"
	case tag.Type == tokens.VariableBegin:
		opening = "{%+"
	}
	var b strings.Builder
	b.WriteString(source[:start])
	expr := strings.TrimSpace(source[open:close])
	if !hasElse {
		expr += " else __undefined"
	}
	fmt.Fprintf(&b, "%s set %s = %s %%}", opening, name, expr)
	b.WriteString(source[start : start+2])
	b.WriteString(source[body:open])
	b.WriteString(name)
	b.WriteString(source[close:])
	return b.String()
}
