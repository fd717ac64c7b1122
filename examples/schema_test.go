package examples_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// openAPI is the W&B Training OpenAPI document (api/testdata/openapi.json,
// a copy of the reference). The checker below understands what the
// document uses: $ref, anyOf, type, required, properties,
// additionalProperties, items, enum, const and format uuid.
type openAPI struct {
	Paths      map[string]map[string]map[string]any `json:"paths"`
	Components struct {
		Schemas map[string]any `json:"schemas"`
	} `json:"components"`
}

func loadOpenAPI(t *testing.T) *openAPI {
	t.Helper()
	raw, err := os.ReadFile("../api/testdata/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var d openAPI
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("decode the OpenAPI document: %v", err)
	}
	return &d
}

// route finds the document's path template for a request path.
func (d *openAPI) route(path string) (string, bool) {
	segs := strings.Split(path, "/")
	var templates []string
	for tmpl := range d.Paths {
		templates = append(templates, tmpl)
	}
	sort.Strings(templates)
next:
	for _, tmpl := range templates {
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		for i, s := range ts {
			if !strings.HasPrefix(s, "{") && s != segs[i] {
				continue next
			}
		}
		return tmpl, true
	}
	return "", false
}

// responseSchema is the schema of a documented answer; documented is false
// when the document does not describe the route, the method or the status.
func (d *openAPI) responseSchema(method, path string, status int) (schema any, documented bool) {
	tmpl, ok := d.route(path)
	if !ok {
		return nil, false
	}
	responses, _ := d.Paths[tmpl][strings.ToLower(method)]["responses"].(map[string]any)
	r, ok := responses[strconv.Itoa(status)].(map[string]any)
	if !ok {
		return nil, false
	}
	content, _ := r["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	return media["schema"], true
}

var canonicalUUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// violations lists where v breaks schema s (JSON path first).
func (d *openAPI) violations(s any, v any, at string) []string {
	sm, _ := s.(map[string]any)
	if len(sm) == 0 {
		return nil // {} or absent: anything goes
	}
	if ref, ok := sm["$ref"].(string); ok {
		target, ok := d.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
		if !ok {
			return []string{at + ": unknown " + ref}
		}
		return d.violations(target, v, at)
	}
	if alts, ok := sm["anyOf"].([]any); ok {
		var why []string
		for _, alt := range alts {
			errs := d.violations(alt, v, at)
			if len(errs) == 0 {
				return nil
			}
			why = append(why, errs...)
		}
		return []string{fmt.Sprintf("%s: no anyOf member matches (%s)", at, strings.Join(why, "; "))}
	}
	if typ, ok := sm["type"].(string); ok && !isType(v, typ) {
		return []string{fmt.Sprintf("%s: want %s, got %#v", at, typ, v)}
	}
	var errs []string
	if c, ok := sm["const"]; ok && c != v {
		errs = append(errs, fmt.Sprintf("%s: want %v, got %v", at, c, v))
	}
	if enum, ok := sm["enum"].([]any); ok && !inList(enum, v) {
		errs = append(errs, fmt.Sprintf("%s: %v is not one of %v", at, v, enum))
	}
	if str, ok := v.(string); ok && sm["format"] == "uuid" && !canonicalUUID.MatchString(str) {
		errs = append(errs, fmt.Sprintf("%s: %q is not a canonical uuid", at, str))
	}
	switch x := v.(type) {
	case map[string]any:
		required, _ := sm["required"].([]any)
		for _, r := range required {
			if _, ok := x[r.(string)]; !ok {
				errs = append(errs, fmt.Sprintf("%s: %q is required", at, r))
			}
		}
		props, _ := sm["properties"].(map[string]any)
		for k, val := range x {
			if p, ok := props[k]; ok {
				errs = append(errs, d.violations(p, val, at+"."+k)...)
			} else if extra, ok := sm["additionalProperties"].(map[string]any); ok {
				errs = append(errs, d.violations(extra, val, at+"."+k)...)
			}
		}
	case []any:
		for i, item := range x {
			errs = append(errs, d.violations(sm["items"], item, fmt.Sprintf("%s[%d]", at, i))...)
		}
	}
	return errs
}

func isType(v any, typ string) bool {
	switch x := v.(type) {
	case nil:
		return typ == "null"
	case bool:
		return typ == "boolean"
	case string:
		return typ == "string"
	case float64:
		return typ == "number" || typ == "integer" && x == float64(int64(x))
	case []any:
		return typ == "array"
	case map[string]any:
		return typ == "object"
	}
	return false
}

func inList(list []any, v any) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// detailError is the body of every error the document does not describe
// (FastAPI's HTTPException): {"detail": "message"}.
var detailError = map[string]any{"type": "object", "required": []any{"detail"},
	"properties": map[string]any{"detail": map[string]any{"type": "string"}}}

// checkExchanges checks every recorded answer: documented ones against the
// document, undocumented errors against detailError. It returns how many
// answers of each documented route (METHOD template) it checked.
func checkExchanges(t *testing.T, d *openAPI, log []exchange) map[string]int {
	t.Helper()
	checked := map[string]int{}
	for _, e := range log {
		var body any
		if err := json.Unmarshal(e.Body, &body); err != nil {
			t.Errorf("%s %s: %d answer is not JSON: %v", e.Method, e.Path, e.Status, err)
			continue
		}
		schema, documented := d.responseSchema(e.Method, e.Path, e.Status)
		if !documented && e.Status < 400 {
			continue // a route the document lacks (files, job list, cancel)
		}
		if !documented {
			schema = detailError
		}
		for _, v := range d.violations(schema, body, "$") {
			t.Errorf("%s %s?%s → %d does not match the document: %s", e.Method, e.Path, e.Query, e.Status, v)
		}
		tmpl, _ := d.route(e.Path)
		checked[fmt.Sprintf("%s %s %d", e.Method, tmpl, e.Status)]++
	}
	return checked
}

// TestCheckerFindsViolations makes sure the checker is not vacuous.
func TestCheckerFindsViolations(t *testing.T) {
	d := loadOpenAPI(t)
	bad := map[string]any{"object": "list", "data": []any{map[string]any{"id": "x", "step": 1.5}}, "has_more": "no"}
	got := strings.Join(d.violations(map[string]any{"$ref": "#/components/schemas/PaginatedResponse_CheckpointResponse_"}, bad, "$"), "\n")
	for _, want := range []string{`$.data[0]: "metrics" is required`, `$.data[0].id: "x" is not a canonical uuid`,
		"$.data[0].step: want integer", "$.has_more: want boolean"} {
		if !strings.Contains(got, want) {
			t.Errorf("violation %q not reported; got:\n%s", want, got)
		}
	}
}
