package api_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
)

// This file checks response bodies against the OpenAPI document (a copy of
// ../shared/reference/wandb-training-openapi.json in testdata, so a fresh
// clone has it). It understands the subset the document uses: type, required,
// properties, additionalProperties, items, anyOf, $ref, enum, const and
// format uuid.

type openAPI struct {
	Paths      map[string]map[string]operation `json:"paths"`
	Components struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

type operation struct {
	Responses map[string]struct {
		Content map[string]struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"content"`
	} `json:"responses"`
}

type schema struct {
	Ref                  string                     `json:"$ref"`
	Type                 string                     `json:"type"`
	Required             []string                   `json:"required"`
	Properties           map[string]json.RawMessage `json:"properties"`
	AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	Items                json.RawMessage            `json:"items"`
	AnyOf                []json.RawMessage          `json:"anyOf"`
	Enum                 []any                      `json:"enum"`
	Const                any                        `json:"const"`
	Format               string                     `json:"format"`
}

var (
	docOnce sync.Once
	doc     *openAPI
	docErr  error
)

func loadDoc(t testing.TB) *openAPI {
	t.Helper()
	docOnce.Do(func() {
		b, err := os.ReadFile("testdata/openapi.json")
		if err != nil {
			docErr = err
			return
		}
		doc = &openAPI{}
		if docErr = json.Unmarshal(b, doc); docErr == nil {
			docErr = doc.extend("testdata/trainyard-additions.json")
		}
	})
	if docErr != nil {
		t.Fatalf("load OpenAPI document: %v", docErr)
	}
	return doc
}

// additions are trainyard's own extensions of the hosted service's
// document, kept apart so the copy of the document stays as published:
// values an enum gains (event types a pause adds), by schema name.
type additions struct {
	Enums map[string][]any `json:"enums"`
}

// extend applies the additions in file to d.
func (d *openAPI) extend(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var add additions
	if err := json.Unmarshal(b, &add); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for name, values := range add.Enums {
		var s map[string]any
		if err := json.Unmarshal(d.Components.Schemas[name], &s); err != nil {
			return fmt.Errorf("%s: schema %s: %w", file, name, err)
		}
		enum, ok := s["enum"].([]any)
		if !ok {
			return fmt.Errorf("%s: schema %s has no enum", file, name)
		}
		s["enum"] = append(enum, values...)
		if d.Components.Schemas[name], err = json.Marshal(s); err != nil {
			return err
		}
	}
	return nil
}

// templateFor finds the document path template matching a request path.
func (d *openAPI) templateFor(path string) (string, bool) {
	segs := strings.Split(path, "/")
	keys := make([]string, 0, len(d.Paths))
	for k := range d.Paths {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic when templates overlap
	for _, tmpl := range keys {
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		ok := true
		for i := range ts {
			if !strings.HasPrefix(ts[i], "{") && ts[i] != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return tmpl, true
		}
	}
	return "", false
}

// responseSchema returns the schema the document gives for a response, and
// false when the document does not describe that status for the route.
func (d *openAPI) responseSchema(method, path string, status int) (json.RawMessage, bool) {
	tmpl, ok := d.templateFor(path)
	if !ok {
		return nil, false
	}
	op, ok := d.Paths[tmpl][strings.ToLower(method)]
	if !ok {
		return nil, false
	}
	r, ok := op.Responses[fmt.Sprint(status)]
	if !ok {
		return nil, false
	}
	return r.Content["application/json"].Schema, true
}

// check validates v (decoded with UseNumber-free encoding/json) against s
// and returns every violation with its JSON path.
func (d *openAPI) check(raw json.RawMessage, v any, path string) []string {
	var s schema
	if len(raw) == 0 || string(raw) == "{}" {
		return nil // the document's "any"
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return []string{fmt.Sprintf("%s: bad schema: %v", path, err)}
	}
	if s.Ref != "" {
		name := strings.TrimPrefix(s.Ref, "#/components/schemas/")
		ref, ok := d.Components.Schemas[name]
		if !ok {
			return []string{fmt.Sprintf("%s: unknown $ref %s", path, s.Ref)}
		}
		return d.check(ref, v, path)
	}
	if len(s.AnyOf) > 0 {
		var all []string
		for _, alt := range s.AnyOf {
			errs := d.check(alt, v, path)
			if len(errs) == 0 {
				return nil
			}
			all = append(all, errs...)
		}
		return []string{fmt.Sprintf("%s: matches no anyOf member: %s", path, strings.Join(all, "; "))}
	}
	var errs []string
	if s.Type != "" && !hasType(v, s.Type) {
		return []string{fmt.Sprintf("%s: want %s, got %T (%v)", path, s.Type, v, v)}
	}
	if s.Const != nil && v != s.Const {
		errs = append(errs, fmt.Sprintf("%s: want const %v, got %v", path, s.Const, v))
	}
	if len(s.Enum) > 0 && !contains(s.Enum, v) {
		errs = append(errs, fmt.Sprintf("%s: %v not in enum %v", path, v, s.Enum))
	}
	if s.Format == "uuid" {
		if str, ok := v.(string); ok {
			if _, err := uuid.Parse(str); err != nil || !uuidRE.MatchString(str) {
				errs = append(errs, fmt.Sprintf("%s: %q is not a canonical uuid", path, str))
			}
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for _, req := range s.Required {
			if _, ok := x[req]; !ok {
				errs = append(errs, fmt.Sprintf("%s: required property %q missing", path, req))
			}
		}
		for k, val := range x {
			if ps, ok := s.Properties[k]; ok {
				errs = append(errs, d.check(ps, val, path+"."+k)...)
			} else if len(s.AdditionalProperties) > 0 && string(s.AdditionalProperties) != "true" {
				errs = append(errs, d.check(s.AdditionalProperties, val, path+"."+k)...)
			}
		}
	case []any:
		for i, item := range x {
			errs = append(errs, d.check(s.Items, item, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return errs
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func hasType(v any, typ string) bool {
	switch typ {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	}
	return false
}

func contains(list []any, v any) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// detailSchema is FastAPI's HTTPException body, which the document does
// not list but every non-validation error uses.
var detailSchema = json.RawMessage(`{"type":"object","required":["detail"],"properties":{"detail":{"type":"string"}}}`)

func TestSchemaCheckerCatchesViolations(t *testing.T) {
	d := loadDoc(t)
	ref := json.RawMessage(`{"$ref":"#/components/schemas/ModelResponse"}`)
	good := map[string]any{"id": "0190a8c4-2b6e-7c3b-9c1e-123456789abc", "entity": "e", "project": "p", "name": "n", "base_model": "b", "run_id": nil}
	if errs := d.check(ref, good, "$"); len(errs) != 0 {
		t.Errorf("valid ModelResponse rejected: %v", errs)
	}
	bad := map[string]any{"id": "nope", "entity": 1, "project": "p", "name": "n", "run_id": 3.0}
	errs := d.check(ref, bad, "$")
	joined := strings.Join(errs, "\n")
	for _, want := range []string{"not a canonical uuid", "$.entity: want string", `"base_model" missing`, "$.run_id: matches no anyOf"} {
		if !strings.Contains(joined, want) {
			t.Errorf("violation %q not reported in:\n%s", want, joined)
		}
	}
}
