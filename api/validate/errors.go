// Package validate checks decoded JSON request data and reports problems the
// way FastAPI and pydantic v2 do, so clients of the hosted W&B Training API
// see the same 422 bodies:
//
//	{"detail":[{"type":"missing","loc":["body","trajectory_groups",0,"trajectories",2,"reward"],
//	            "msg":"Field required","input":{...}}]}
//
// Decode parses a body (with CPython's syntax messages and positions); Errors
// collects problems; a Node is one value at a location, with typed accessors
// (String, Float, Int, Bool, Enum, UUID, List, Model, Dict, AnyOf) that
// record an error and return ok=false when the value does not fit. Handlers
// walk the whole body, so every problem is reported at once, then check
// Errors.Err.
package validate

import (
	"fmt"
	"strings"
)

// MaxErrors bounds how many errors one response lists. pydantic has no
// bound, but a body of a million wrong items would otherwise produce a
// response far larger than the request.
const MaxErrors = 1000

// Error is one validation problem, in FastAPI's field order.
type Error struct {
	Type  string         `json:"type"`
	Loc   []any          `json:"loc"`
	Msg   string         `json:"msg"`
	Input any            `json:"input"`
	Ctx   map[string]any `json:"ctx,omitempty"`
}

// Errors collects validation errors. The zero value is ready to use; a nil
// *Errors is not.
type Errors struct {
	list    []Error
	dropped int
}

// Add records e, or counts it as dropped past MaxErrors.
func (e *Errors) Add(err Error) {
	if len(e.list) >= MaxErrors {
		e.dropped++
		return
	}
	e.list = append(e.list, err)
}

// Len returns the number of errors seen, dropped ones included.
func (e *Errors) Len() int { return len(e.list) + e.dropped }

// List returns the recorded errors.
func (e *Errors) List() []Error { return e.list }

// Err returns nil when no error was recorded, otherwise a *ValidationError
// holding them.
func (e *Errors) Err() error {
	if e.Len() == 0 {
		return nil
	}
	return &ValidationError{Detail: e.list, Dropped: e.dropped}
}

// ValidationError is a request that failed validation; the API answers it
// with 422 and {"detail": Detail}.
type ValidationError struct {
	Detail  []Error
	Dropped int // errors beyond MaxErrors that are not listed
}

// Error implements the error interface with a short summary.
func (v *ValidationError) Error() string {
	parts := make([]string, 0, 3)
	for i, e := range v.Detail {
		if i == 3 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s: %s", locString(e.Loc), e.Msg))
	}
	return fmt.Sprintf("%d validation errors: %s", len(v.Detail)+v.Dropped, strings.Join(parts, "; "))
}

func locString(loc []any) string {
	s := make([]string, len(loc))
	for i, p := range loc {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ".")
}

// New returns a ValidationError with a single error, for checks made outside
// a walk (e.g. a body that cannot be parsed).
func New(typ string, loc []any, msg string, input any, ctx map[string]any) *ValidationError {
	return &ValidationError{Detail: []Error{{Type: typ, Loc: loc, Msg: msg, Input: input, Ctx: ctx}}}
}

// FromDecodeError turns a *SyntaxError from Decode into FastAPI's
// json_invalid error at ["body", position].
func FromDecodeError(err *SyntaxError) *ValidationError {
	return New("json_invalid", []any{"body", err.Pos}, "JSON decode error",
		map[string]any{}, map[string]any{"error": err.Msg})
}
