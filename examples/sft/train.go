package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/trainyard/trainyard/examples/trainingapi"
)

// upload stores the JSONL data with the service and returns its
// training_data_url, wandb-artifact:///ENTITY/PROJECT/NAME:v0. Uploads are
// immutable, so the name carries a hash of the content: running again
// with the same data finds the first upload (409) and reuses it.
func upload(ctx context.Context, c *trainingapi.Client, entity, project, prefix string, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	name := prefix + "-" + hex.EncodeToString(sum[:6])
	var created struct {
		URL string `json:"url"`
	}
	q := url.Values{"project": {project}, "name": {name}}
	err := c.Send(ctx, http.MethodPost, "/preview/files?"+q.Encode(), "application/jsonl", data, &created)
	var ae *trainingapi.APIError
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		return fmt.Sprintf("wandb-artifact:///%s/%s/%s:v0", entity, project, name), nil
	}
	return created.URL, err
}

// trainSFT runs one SFT job over the data and returns its id and the loss
// of every gradient step.
func trainSFT(ctx context.Context, c *trainingapi.Client, modelID, dataURL string, o options, out io.Writer) (string, []float64, error) {
	var created struct {
		ID string `json:"id"`
	}
	err := c.Do(ctx, http.MethodPost, "/preview/sft-training-jobs", map[string]any{
		"model_id":            modelID,
		"training_data_url":   dataURL,
		"config":              map[string]any{"batch_size": o.batchSize, "learning_rate": o.learningRate},
		"experimental_config": map[string]any{"num_epochs": o.epochs, "shuffle": true, "seed": o.seed},
	}, &created)
	if err != nil {
		return "", nil, fmt.Errorf("create the SFT job: %w", err)
	}
	fmt.Fprintf(out, "SFT job %s: %d epochs, batches of %d, learning rate %g\n", created.ID, o.epochs, o.batchSize, o.learningRate)
	steps, err := c.WaitForJob(ctx, created.ID, out, "loss", "num_trainable_tokens", "learning_rate")
	if err != nil {
		return created.ID, nil, fmt.Errorf("SFT job %s: %w", created.ID, err)
	}
	j, err := c.GetJob(ctx, created.ID)
	if err != nil {
		return created.ID, nil, fmt.Errorf("read SFT job %s: %w", created.ID, err)
	}
	fmt.Fprintf(out, "    job %s %s, step %d/%d\n", j.ID, j.Status, j.CurrentStep, j.TotalSteps)
	losses := make([]float64, 0, len(steps))
	for _, s := range steps {
		if l, ok := s["loss"].(float64); ok {
			losses = append(losses, l)
		}
	}
	return created.ID, losses, nil
}

// countLines counts the non-blank lines of data.
func countLines(data []byte) int {
	n := 0
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			n++
		}
	}
	return n
}
