package trainyard_test

import (
	"strings"
	"testing"

	"github.com/trainyard/trainyard"
)

func TestParseS3URL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ raw, bucket, key string }{
		{"s3://data-bucket/train.jsonl", "data-bucket", "train.jsonl"},
		{"s3://Data-Bucket/a/b c.jsonl", "data-bucket", "a/b c.jsonl"},
		{"s3://data.bucket./a%20b/c.jsonl", "data.bucket", "a b/c.jsonl"},
		{"S3://data-bucket/x", "data-bucket", "x"},
	} {
		obj, err := trainyard.ParseS3URL(tc.raw)
		if err != nil {
			t.Errorf("ParseS3URL(%q): %v", tc.raw, err)
			continue
		}
		if obj.Bucket != tc.bucket || obj.Key != tc.key {
			t.Errorf("ParseS3URL(%q) = %q %q, want %q %q", tc.raw, obj.Bucket, obj.Key, tc.bucket, tc.key)
		}
	}
	for _, raw := range []string{
		"", "train.jsonl", "https://example.com/x", "s3://", "s3:///key", "s3://bucket", "s3://bucket/",
		"s3://bucket/dir/", "s3://user:pw@bucket/key", "s3://bucket/key?versionId=1", "s3://bucket/key?",
		"s3://bucket/key#frag", "s3://bucket:9000/key", "s3:bucket/key", "s3://b/key", "s3://-bucket/key",
		"s3://bucket_name/key", "s3://bu..cket/key", "s3://bucket/a\\..\\b",
		"s3://bucket/a/../b", "s3://bucket/../b", "s3://bucket/a/..", "s3://bucket//b", "s3://bucket/a//b",
		"s3://bucket/./b", "s3://bucket/a/./b", "s3://bucket/a/.", "s3://bucket/%2E%2E/b", "s3://bucket/%2e%2E/b",
		"s3://bucket/a%2F..%2Fb", "s3://bucket/a%2F%2Fb", "s3://bucket/%2Fb", "s3://bucket/a%00b",
		"s3://bucket/" + strings.Repeat("k", 1025),
	} {
		if obj, err := trainyard.ParseS3URL(raw); err == nil {
			t.Errorf("ParseS3URL(%q) = %+v, want an error", raw, obj)
		}
	}
}

// TestS3ReadPolicyOwnBucket is the table of issue 16: every spelling of a
// URL into the service's own bucket is refused, including traversals from
// an allowed prefix into another account's files.
func TestS3ReadPolicyOwnBucket(t *testing.T) {
	t.Parallel()
	p := trainyard.S3ReadPolicy{OwnBucket: "trainyard", ReadBuckets: []string{"user-data", "TRAINYARD"}}
	victim := "files/0193e0c6-7f2b-7c4e-9a51-3a0d9c1f2b11/artifacts/demo/secretfile/v0/data.jsonl"
	for _, raw := range []string{
		"s3://trainyard/" + victim,
		"s3://trainyard/x/../" + victim,
		"s3://trainyard/x/%2E%2E/" + victim,
		"s3://trainyard/x/%2e%2e/" + victim,
		"s3://trainyard/x%2F..%2F" + victim,
		"s3://trainyard//" + victim,
		"s3://trainyard/./" + victim,
		"s3://trainyard/upload/./../" + victim,
		"s3://TrainYard/" + victim,
		"s3://trainyard./" + victim,
		"s3://%74rainyard/" + victim,
		"s3://trainyard/other-prefix/data.jsonl",
		"s3://user-data/../trainyard/" + victim,
		"s3://user-data/%2E%2E/trainyard/" + victim,
	} {
		if obj, err := p.Check(raw); err == nil {
			t.Errorf("Check(%q) = %+v, want refused", raw, obj)
		}
	}
	obj, err := p.Check("s3://User-Data/train/set.jsonl")
	if err != nil || obj != (trainyard.S3Object{Bucket: "user-data", Key: "train/set.jsonl"}) {
		t.Fatalf("allowed bucket: %+v, %v", obj, err)
	}
	if _, err := p.Check("s3://elsewhere/x.jsonl"); err == nil || !strings.Contains(err.Error(), "user-data") {
		t.Fatalf("a bucket off the list: %v", err)
	}
	none := trainyard.S3ReadPolicy{OwnBucket: "trainyard"}
	if _, err := none.Check("s3://user-data/x.jsonl"); err == nil || !strings.Contains(err.Error(), "TRAINYARD_S3_READ_BUCKETS") {
		t.Fatalf("no allow-list: %v", err)
	}
}
