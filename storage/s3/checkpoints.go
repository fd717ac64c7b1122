package s3

import (
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/trainyard/trainyard"
)

// PutCheckpointFile stores one file of the checkpoint of modelID at step.
// size is the exact length of r, or -1 when unknown.
func (s *Store) PutCheckpointFile(ctx context.Context, modelID string, step int, name string, r io.Reader, size int64) error {
	key, err := checkpointKey(modelID, step, name)
	if err != nil {
		return err
	}
	return s.putKeeping(ctx, key, r, size, true)
}

// GetCheckpointFile opens one file of a checkpoint; ENOTFOUND if absent. The
// caller closes the reader.
func (s *Store) GetCheckpointFile(ctx context.Context, modelID string, step int, name string) (io.ReadCloser, error) {
	key, err := checkpointKey(modelID, step, name)
	if err != nil {
		return nil, err
	}
	return s.getRecent(ctx, key)
}

// DeleteCheckpointFiles removes every file of a checkpoint.
func (s *Store) DeleteCheckpointFiles(ctx context.Context, modelID string, step int) error {
	p, err := checkpointPrefix(modelID, step)
	if err != nil {
		return err
	}
	return s.deletePrefix(ctx, p)
}

// CopyCheckpointFiles copies every file of a checkpoint to another model's
// step (a fork's step 0), server-side.
func (s *Store) CopyCheckpointFiles(ctx context.Context, fromModel string, fromStep int, toModel string, toStep int) error {
	from, err := checkpointPrefix(fromModel, fromStep)
	if err != nil {
		return err
	}
	to, err := checkpointPrefix(toModel, toStep)
	if err != nil {
		return err
	}
	pages := awss3.NewListObjectsV2Paginator(s.client, &awss3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(from)})
	copied := 0
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return translate(err, "objects under %s", from)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			_, err := s.client.CopyObject(ctx, &awss3.CopyObjectInput{Bucket: aws.String(s.bucket),
				CopySource: aws.String(s.bucket + "/" + key), Key: aws.String(to + strings.TrimPrefix(key, from))})
			if err != nil {
				return translate(err, "copy object %s", key)
			}
			copied++
		}
	}
	if copied == 0 {
		return trainyard.Errorf(trainyard.ENOTFOUND, "checkpoint %d of model %s has no files", fromStep, fromModel)
	}
	return nil
}

// CheckpointSteps lists the steps of the model that have objects, in
// ascending order, whether or not a checkpoint row names them (retention
// finds objects left behind by an interrupted deletion this way).
func (s *Store) CheckpointSteps(ctx context.Context, modelID string) ([]int, error) {
	p, err := modelPrefix(modelID)
	if err != nil {
		return nil, err
	}
	p += "checkpoints/"
	var steps []int
	pages := awss3.NewListObjectsV2Paginator(s.client, &awss3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket), Prefix: aws.String(p), Delimiter: aws.String("/"),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, translate(err, "checkpoint objects of model %s", modelID)
		}
		for _, cp := range page.CommonPrefixes {
			step, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), p), "/"))
			if err == nil {
				steps = append(steps, step)
			}
		}
	}
	return steps, nil
}
