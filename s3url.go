package trainyard

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// S3Object names one object a user points at with an s3://bucket/key URL
// (an SFT training_data_url), in canonical form: the bucket lower-cased, the
// key percent-decoded and made only of plain segments.
type S3Object struct {
	Bucket, Key string
}

// String is the object's canonical URL, its key escaped where a URL needs
// it ("#", "?", "%", blanks).
func (o S3Object) String() string {
	return (&url.URL{Scheme: "s3", Host: o.Bucket, Path: "/" + o.Key}).String()
}

// ParseS3URL parses and canonicalises an s3://bucket/key URL. It refuses,
// rather than cleans, any key with an empty, "." or ".." segment however it is
// spelled ("//", "./", "%2E%2E", "%2F"): S3 itself takes keys literally, but a
// gateway over a file system (versitygw, MinIO in FS mode) resolves such
// paths, so a cleaned key and the key a server reads could differ. The
// message of the error is written for the user.
func ParseS3URL(raw string) (S3Object, error) {
	bad := func(why string) (S3Object, error) {
		return S3Object{}, fmt.Errorf("invalid S3 URL: %s (want s3://bucket/key)", why)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return bad("it does not parse")
	case u.Scheme != "s3":
		return bad("the scheme is not s3")
	case u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Port() != "":
		return bad("it may carry no credentials, port, query or fragment")
	}
	bucket := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if !validBucketName(bucket) {
		return bad(fmt.Sprintf("%q is not a bucket name", u.Host))
	}
	key, ok := strings.CutPrefix(u.Path, "/")
	if !ok || key == "" {
		return bad("it names no object")
	}
	if len(key) > 1024 {
		return bad("the key is longer than 1024 bytes")
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsFunc(seg, func(r rune) bool {
			return r < 0x20 || r == 0x7f || r == '\\'
		}) {
			return bad(fmt.Sprintf("the key %q has an empty, '.' or '..' segment, a backslash or a control character", key))
		}
	}
	return S3Object{Bucket: bucket, Key: key}, nil
}

// validBucketName applies S3's bucket naming rules: 3 to 63 lower-case
// letters, digits, '.' and '-', starting and ending with a letter or digit.
func validBucketName(b string) bool {
	if len(b) < 3 || len(b) > 63 || strings.Contains(b, "..") {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '.' && c != '-' || i == 0 || i == len(b)-1) {
			return false
		}
	}
	return true
}

// S3ReadPolicy says which buckets users may point training data at. The
// service's own bucket is never one of them, whatever the list says: its
// objects (checkpoints, job inputs, every account's uploads) are read only by
// keys the service builds from ids, so an uploaded file is reachable only
// through its owner's wandb-artifact URL.
type S3ReadPolicy struct {
	// OwnBucket is the service's bucket.
	OwnBucket string
	// ReadBuckets are the other buckets s3:// training data may come from
	// (TRAINYARD_S3_READ_BUCKETS); empty allows none.
	ReadBuckets []string
}

// Check parses raw and says whether the policy lets a user read it; the
// error is written for the user.
func (p S3ReadPolicy) Check(raw string) (S3Object, error) {
	obj, err := ParseS3URL(raw)
	if err != nil {
		return obj, err
	}
	if strings.EqualFold(obj.Bucket, p.OwnBucket) {
		return S3Object{}, fmt.Errorf("s3:// URLs may not point into this server's own bucket; upload the data " +
			"(POST /v1/preview/files) and use the wandb-artifact URL it returns")
	}
	if !slices.ContainsFunc(p.ReadBuckets, func(b string) bool { return strings.EqualFold(b, obj.Bucket) }) {
		if len(p.ReadBuckets) == 0 {
			return S3Object{}, fmt.Errorf("this server reads s3:// training data from no bucket (its operator " +
				"lists readable buckets in TRAINYARD_S3_READ_BUCKETS); upload the data with POST /v1/preview/files instead")
		}
		return S3Object{}, fmt.Errorf("bucket %q is not one this server reads training data from (%s)",
			obj.Bucket, strings.Join(p.ReadBuckets, ", "))
	}
	return obj, nil
}
