package hftemplate

import "github.com/nikolalohinski/gonja/v2/exec"

// pyList is a list the template indexes as Python does. gonja v2.9.1 takes a negative index only when it
// is shorter than the list (x[-1] of a one-item list is undefined), so Qwen3's template failed on an
// assistant message without "<think>" (content.split('<think>')[-1]) and any template reading
// messages[-1] on a one-message conversation. The lists the template is given (messages, tools) and the
// ones split and rsplit return are pyLists; gonja still iterates, measures and filters them as slices.
type pyList []any

// GetItem is gonja's ItemGetter: integer keys as Python's, anything else is not an item of a list.
func (l pyList) GetItem(key any) (*exec.Value, bool) {
	i, ok := key.(int)
	if !ok {
		return exec.AsValue(nil), false
	}
	if i < 0 {
		i += len(l)
	}
	if i < 0 || i >= len(l) {
		return exec.AsValue(nil), false
	}
	return exec.AsValue(l[i]), true
}
