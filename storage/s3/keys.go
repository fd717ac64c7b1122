package s3

import (
	"fmt"
	"strings"

	"github.com/trainyard/trainyard"
)

// The object layout. Everything of a model lives under its prefix, so
// deleting a model is one prefix sweep; a checkpoint's step is zero-padded so
// listings sort by step.
//
//	models/<model id>/checkpoints/<step, 8 digits>/<file>
//	jobs/<job id>/<name>
const (
	modelsPrefix = "models/"
	jobsPrefix   = "jobs/"
	maxStep      = 99_999_999
)

func modelPrefix(modelID string) (string, error) {
	if err := checkSegment("model id", modelID); err != nil {
		return "", err
	}
	return modelsPrefix + modelID + "/", nil
}

func checkpointPrefix(modelID string, step int) (string, error) {
	p, err := modelPrefix(modelID)
	if err != nil {
		return "", err
	}
	if step < 0 || step > maxStep {
		return "", trainyard.Errorf(trainyard.EINVALID, "checkpoint step %d out of range 0..%d", step, maxStep)
	}
	return fmt.Sprintf("%scheckpoints/%08d/", p, step), nil
}

func checkpointKey(modelID string, step int, name string) (string, error) {
	p, err := checkpointPrefix(modelID, step)
	if err != nil {
		return "", err
	}
	if err := checkSegment("file name", name); err != nil {
		return "", err
	}
	return p + name, nil
}

func jobPrefix(jobID string) (string, error) {
	if err := checkSegment("job id", jobID); err != nil {
		return "", err
	}
	return jobsPrefix + jobID + "/", nil
}

func jobKey(jobID, name string) (string, error) {
	p, err := jobPrefix(jobID)
	if err != nil {
		return "", err
	}
	if err := checkSegment("input name", name); err != nil {
		return "", err
	}
	return p + name, nil
}

// checkSegment rejects anything that could escape its place in a key: an
// empty or dot segment, a slash or a control character.
func checkSegment(what, s string) error {
	if s == "" || s == "." || s == ".." || len(s) > 255 || strings.ContainsAny(s, "/\\") ||
		strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return trainyard.Errorf(trainyard.EINVALID, "invalid %s %q", what, s)
	}
	return nil
}
