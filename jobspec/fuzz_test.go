package jobspec

import (
	"strings"
	"testing"
)

// FuzzParseArtifactURL: no input panics, and an accepted URL names its
// parts so that writing them back parses to the same reference.
func FuzzParseArtifactURL(f *testing.F) {
	for _, s := range []string{"wandb-artifact:///team/proj/data:v0", "wandb-artifact:///team/proj/data", "wandb-artifact:///t/../d",
		"wandb-artifact:///t/p/d:latest", "wandb-artifact:///t/p/d:v9:x", "wandb-artifact:///t/p%2F/d", "wandb-artifact:////p/d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		ref, err := ParseArtifactURL(raw)
		if err != nil {
			return
		}
		url := "wandb-artifact:///" + ref.Entity + "/" + ref.Project + "/" + ref.Name
		if ref.Version != "" {
			url += ":" + ref.Version
		}
		if again, err := ParseArtifactURL(url); err != nil || again != ref {
			t.Fatalf("%q parsed to %+v; written back as %q it parses to %+v (%v)", raw, ref, url, again, err)
		}
		for _, part := range []string{ref.Entity, ref.Project, ref.Name} {
			if part == "." || part == ".." || strings.ContainsAny(part, "/\\\\") {
				t.Fatalf("%q: part %q could leave its place in a key", raw, part)
			}
		}
	})
}
