package hf

import (
	"errors"
	"fmt"
)

// LoadError reports a tokenizer file that cannot be used: unreadable, malformed, or using a feature this
// package does not implement. It names the file and the JSON field, so that an unsupported model is
// refused with a reason instead of being tokenized differently from its reference.
type LoadError struct {
	File  string // e.g. "tokenizer.json", or the path given to Load
	Field string // JSON path of the offending value, e.g. "pre_tokenizer.pretokenizers[0].type"; empty for the whole file
	Err   error
}

// Error gives the file, the field and the reason.
func (e *LoadError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("hf tokenizer: %s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("hf tokenizer: %s: %s: %v", e.File, e.Field, e.Err)
}

// Unwrap returns the reason, e.g. ErrUnsupported or an os error.
func (e *LoadError) Unwrap() error { return e.Err }

// ErrUnsupported is wrapped by every LoadError about a feature this package does not implement.
var ErrUnsupported = errors.New("not supported")

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}
