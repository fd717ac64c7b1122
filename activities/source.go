package activities

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/trainyard/trainyard"
)

// Schemes of training_data_url.
const (
	schemeS3       = "s3"
	schemeHTTP     = "http"
	schemeHTTPS    = "https"
	schemeFile     = "file"
	schemeArtifact = "wandb-artifact"
)

// CheckDataURL validates an SFT training_data_url without fetching it:
// s3://bucket/key, http(s)://..., wandb-artifact:///ENTITY/PROJECT/NAME[:VERSION]
// and, when allowFile is set, file:///absolute/path. The error message is
// written for the user.
func CheckDataURL(raw string, allowFile bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a valid URL")
	}
	switch u.Scheme {
	case schemeS3:
		if u.Host == "" || strings.Trim(u.Path, "/") == "" {
			return fmt.Errorf("an s3 URL must name a bucket and a key: s3://bucket/key")
		}
	case schemeHTTP, schemeHTTPS:
		if u.Host == "" {
			return fmt.Errorf("an http(s) URL must name a host")
		}
	case schemeFile:
		if !allowFile {
			return fmt.Errorf("file:// URLs are disabled on this server; upload the data or use s3://, http(s):// or wandb-artifact:///")
		}
		if u.Host != "" || !strings.HasPrefix(u.Path, "/") {
			return fmt.Errorf("a file URL must be file:///absolute/path")
		}
	case schemeArtifact:
		if _, err := ParseArtifactURL(raw); err != nil {
			return err
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

// ParseArtifactURL parses a wandb-artifact URL.
func ParseArtifactURL(raw string) (ArtifactRef, error) {
	rest, ok := strings.CutPrefix(raw, schemeArtifact+":///")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return ArtifactRef{}, fmt.Errorf("an artifact URL must be wandb-artifact:///ENTITY/PROJECT/NAME[:VERSION]")
	}
	ref := ArtifactRef{Entity: parts[0], Project: parts[1], Name: parts[2]}
	if name, version, ok := strings.Cut(ref.Name, ":"); ok {
		if name == "" || version == "" {
			return ArtifactRef{}, fmt.Errorf("an artifact URL must be wandb-artifact:///ENTITY/PROJECT/NAME[:VERSION]")
		}
		ref.Name, ref.Version = name, version
	}
	return ref, nil
}

// fetchData reads the job's SFT data: the copy stored with the job when
// there is one, otherwise training_data_url, which is then copied in.
func (a *Activities) fetchData(ctx context.Context, job *trainyard.Job, model *trainyard.Model, rawURL string) ([]byte, error) {
	if rc, err := a.d.Blobs.GetJobInput(ctx, job.ID, DataFile); err == nil {
		defer rc.Close()
		return a.readLimited(rc, "the stored training data")
	} else if !isCode(err, trainyard.ENOTFOUND) {
		return nil, classify(err, "open the stored training data")
	}
	if err := CheckDataURL(rawURL, a.cfg.AllowFileURLs); err != nil {
		return nil, invalidf("training_data_url: %v", err)
	}
	rc, err := a.openURL(ctx, model, rawURL)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := a.readLimited(rc, "training_data_url")
	if err != nil {
		return nil, err
	}
	if err := a.d.Blobs.PutJobInput(ctx, job.ID, DataFile, bytes.NewReader(data), int64(len(data))); err != nil {
		return nil, classify(err, "store a copy of the training data")
	}
	return data, nil
}

// openURL opens training data by scheme.
func (a *Activities) openURL(ctx context.Context, model *trainyard.Model, raw string) (io.ReadCloser, error) {
	u, _ := url.Parse(raw) // CheckDataURL parsed it
	switch u.Scheme {
	case schemeS3:
		rc, err := a.d.Blobs.GetURL(ctx, raw)
		if err != nil {
			return nil, classify(err, "read training_data_url")
		}
		return rc, nil
	case schemeArtifact:
		return a.openArtifact(ctx, model, raw)
	case schemeFile:
		f, err := os.Open(u.Path)
		if err != nil {
			return nil, invalidf("training_data_url: %v", errors.Unwrap(err))
		}
		return f, nil
	}
	return a.download(ctx, raw)
}

// readLimited reads r up to the configured data limit.
func (a *Activities) readLimited(r io.Reader, what string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, a.cfg.MaxDataBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if int64(len(data)) > a.cfg.MaxDataBytes {
		return nil, invalidf("%s is larger than the limit of %d bytes", what, a.cfg.MaxDataBytes)
	}
	return data, nil
}
