package activities

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// updateSchemas rewrites docs/schemas from the Go types:
// go test ./activities -run TestActivitySchemas -update-schemas
var updateSchemas = flag.Bool("update-schemas", false, "rewrite docs/schemas/*.json from the activity types")

// contractTypes are the payloads a worker in another language exchanges
// with the job workflows when it takes over the compute activities of a base
// model (docs/scaling.md): their inputs, results and heartbeat details, as
// Temporal's default JSON converter encodes them.
var contractTypes = map[string]any{
	"place-input":         PlaceInput{},
	"place-result":        PlaceResult{},
	"prepare-input":       PrepareInput{},
	"prepare-result":      PrepareResult{},
	"train-input":         TrainInput{},
	"train-result":        TrainResult{},
	"train-heartbeat":     heartbeat{},
	"holders-input":       HoldersInput{},
	"holders-result":      HoldersResult{},
	"shard-input":         ShardInput{},
	"shard-result":        ShardResult{},
	"apply-input":         ApplyInput{},
	"wait-turn-input":     WaitTurnInput{},
	"wait-turn-result":    WaitTurnResult{},
	"complete-input":      CompleteInput{},
	"fail-input":          FailInput{},
	"fetch-input":         FetchInput{},
	"fetch-result":        FetchResult{},
	"retention-input":     RetentionInput{},
	"retention-result":    RetentionResult{},
	"pause-input":         PauseInput{},
	"resume-input":        ResumeInput{},
	"request-pause-input": RequestPauseInput{},
}

// TestActivitySchemas checks that docs/schemas holds, for every contract
// type, the JSON Schema of its JSON encoding: property names as
// encoding/json writes them, their types, and as required every field
// written even when empty (no omitempty). A field added, renamed or retyped
// in Go without its schema fails here.
func TestActivitySchemas(t *testing.T) {
	dir := filepath.Join("..", "docs", "schemas")
	for name, v := range contractTypes {
		want, err := json.MarshalIndent(documentSchema(name, reflect.TypeOf(v)), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		path := filepath.Join(dir, name+".json")
		if *updateSchemas {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update-schemas)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s does not match %T; after a deliberate change run go test ./activities -run TestActivitySchemas -update-schemas\nwant:\n%s", path, v, want)
		}
	}
	// Every schema file belongs to a contract type.
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		if _, ok := contractTypes[strings.TrimSuffix(filepath.Base(f), ".json")]; !ok {
			t.Errorf("%s describes no activity type", f)
		}
	}
	// And the encoding agrees with the schema on a real value: a full
	// TrainResult has exactly the schema's properties.
	raw, _ := json.Marshal(TrainResult{Done: 3, Metrics: map[string]float64{"loss": 1}, Paused: true, WorkerQueue: "q", Checksum: 7, StateBytes: 9})
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	props := schemaOf(reflect.TypeOf(TrainResult{}))["properties"].(map[string]any)
	if len(m) != len(props) {
		t.Fatalf("TrainResult encodes %v, schema lists %v", m, props)
	}
	for k := range m {
		if _, ok := props[k]; !ok {
			t.Fatalf("TrainResult encodes %s, which the schema lacks", k)
		}
	}
}

// documentSchema is the schema document of one type.
func documentSchema(name string, t reflect.Type) map[string]any {
	s := schemaOf(t)
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["$id"] = "https://github.com/trainyard/trainyard/docs/schemas/" + name + ".json"
	s["title"] = t.Name()
	return s
}

// schemaOf is the JSON Schema of encoding/json's output for t.
func schemaOf(t reflect.Type) map[string]any {
	switch t.Kind() {
	case reflect.Pointer:
		return map[string]any{"anyOf": []any{schemaOf(t.Elem()), map[string]any{"type": "null"}}}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s := map[string]any{"type": "integer"}
		if t.String() == "time.Duration" {
			s["description"] = "nanoseconds"
		}
		return s
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": []any{"array", "null"}, "items": schemaOf(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": []any{"object", "null"}, "additionalProperties": schemaOf(t.Elem())}
	case reflect.Struct:
		if t.String() == "time.Time" {
			return map[string]any{"type": "string", "format": "date-time"}
		}
		props := map[string]any{}
		required := []any{}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			props[name] = schemaOf(f.Type)
			if !strings.Contains(opts, "omitempty") {
				required = append(required, name)
			}
		}
		return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
	}
	panic(fmt.Sprintf("schemaOf: no JSON Schema for %s", t))
}
