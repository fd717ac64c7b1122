package trainyard_test

import (
	"strings"
	"testing"

	"github.com/trainyard/trainyard"
)

// FuzzParseS3URL: no input panics; an accepted URL is canonical (its
// canonical form parses to itself) and the read policy refuses it exactly
// when it names the service's own bucket, however it was spelled.
func FuzzParseS3URL(f *testing.F) {
	for _, s := range []string{"s3://data-bucket/train.jsonl", "s3://TRAINYARD/x/../files/a/b", "s3://trainyard./%2E%2E/x",
		"s3://%74rainyard/files/x", "s3://b.u.c/a%2Fb", "s3://bucket//x", "s3://user@b/x", "s3://bucket/ok/./x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		obj, err := trainyard.ParseS3URL(raw)
		if err != nil {
			return
		}
		again, err := trainyard.ParseS3URL(obj.String())
		if err != nil || again != obj {
			t.Fatalf("%q parsed to %+v, whose URL %q parses to %+v (%v)", raw, obj, obj.String(), again, err)
		}
		p := trainyard.S3ReadPolicy{OwnBucket: "trainyard", ReadBuckets: []string{obj.Bucket}}
		if _, err := p.Check(raw); (err == nil) == strings.EqualFold(obj.Bucket, "trainyard") {
			t.Fatalf("%q (bucket %q): policy check = %v", raw, obj.Bucket, err)
		}
	})
}
