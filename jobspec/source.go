package jobspec

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/trainyard/trainyard"
)

// Schemes of training_data_url.
const (
	SchemeS3       = "s3"
	SchemeHTTP     = "http"
	SchemeHTTPS    = "https"
	SchemeFile     = "file"
	SchemeArtifact = "wandb-artifact"
)

// DataPolicy says which training_data_url forms a server accepts.
type DataPolicy struct {
	// AllowFile accepts file:///absolute/path (development only: it reads
	// the worker's file system).
	AllowFile bool
	// S3 says which buckets s3:// URLs may name; never the service's own.
	S3 trainyard.S3ReadPolicy
}

// CheckDataURL validates an SFT training_data_url without fetching it:
// s3://bucket/key (on the policy's list), http(s)://...,
// wandb-artifact:///ENTITY/PROJECT/NAME[:VERSION] and, when allowed,
// file:///absolute/path. The error message is written for the user.
func CheckDataURL(raw string, p DataPolicy) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a valid URL")
	}
	switch u.Scheme {
	case SchemeS3:
		if _, err := p.S3.Check(raw); err != nil {
			return err
		}
	case SchemeHTTP, SchemeHTTPS:
		if u.Host == "" {
			return fmt.Errorf("an http(s) URL must name a host")
		}
	case SchemeFile:
		if !p.AllowFile {
			return fmt.Errorf("file:// URLs are disabled on this server; upload the data or use s3://, http(s):// or wandb-artifact:///")
		}
		if u.Host != "" || !strings.HasPrefix(u.Path, "/") {
			return fmt.Errorf("a file URL must be file:///absolute/path")
		}
	case SchemeArtifact:
		ref, err := ParseArtifactURL(raw)
		if err != nil {
			return err
		}
		if ref.Version != "" && ref.Version != "latest" && ref.Version != ArtifactVersion {
			return fmt.Errorf("artifact %s/%s/%s has no version %s: uploads are immutable, so each has only %s",
				ref.Entity, ref.Project, ref.Name, ref.Version, ArtifactVersion)
		}
	default:
		return fmt.Errorf("unsupported URL scheme %q: use s3://, http(s)://, wandb-artifact:/// or an uploaded file", u.Scheme)
	}
	return nil
}

// ArtifactRef names an artifact: wandb-artifact:///ENTITY/PROJECT/NAME[:VERSION].
type ArtifactRef struct {
	Entity, Project, Name string
	// Version is "" when the URL names none (the latest), else e.g. "v0"
	// or "latest".
	Version string
}

// ParseArtifactURL parses a wandb-artifact URL. Its entity, project and
// name follow the rules the API applies to model names, so no part can be
// "." or ".." or carry a path separator.
func ParseArtifactURL(raw string) (ArtifactRef, error) {
	const form = "an artifact URL must be wandb-artifact:///ENTITY/PROJECT/NAME[:VERSION]"
	rest, ok := strings.CutPrefix(raw, SchemeArtifact+":///")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 {
		return ArtifactRef{}, errors.New(form)
	}
	ref := ArtifactRef{Entity: parts[0], Project: parts[1], Name: parts[2]}
	if name, version, ok := strings.Cut(ref.Name, ":"); ok {
		if !artifactVersion.MatchString(version) {
			return ArtifactRef{}, fmt.Errorf("%s; VERSION is vN or latest, not %q", form, version)
		}
		ref.Name, ref.Version = name, version
	}
	for _, p := range []struct{ what, v string }{{"ENTITY", ref.Entity}, {"PROJECT", ref.Project}, {"NAME", ref.Name}} {
		if p.v == "" || p.v == "." || p.v == ".." || !artifactPart.MatchString(p.v) {
			return ArtifactRef{}, fmt.Errorf("%s; %s %q is not a valid name", form, p.what, p.v)
		}
	}
	return ref, nil
}

var (
	// artifactPart is what an entity, project or artifact name may hold:
	// no separators, no URL syntax, no blanks or control characters.
	artifactPart    = regexp.MustCompile(`^[^/\\#?%:\s\x00-\x1f\x7f]{1,128}$`)
	artifactVersion = regexp.MustCompile(`^(v[0-9]{1,9}|latest)$`)
)
