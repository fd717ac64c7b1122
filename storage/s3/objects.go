package s3

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/trainyard/trainyard"
)

// spoolInMemory is the largest unseekable body buffered in memory before an
// upload; larger ones go through a temporary file.
const spoolInMemory = 8 << 20

// deleteBatch is the most keys one DeleteObjects call accepts.
const deleteBatch = 1000

// DeleteModelFiles removes every object of a model.
func (s *Store) DeleteModelFiles(ctx context.Context, modelID string) error {
	p, err := modelPrefix(modelID)
	if err != nil {
		return err
	}
	return s.deletePrefix(ctx, p)
}

// PutJobInput stores a job's input document under the job. size is the
// exact length of r, or -1 when unknown.
func (s *Store) PutJobInput(ctx context.Context, jobID, name string, r io.Reader, size int64) error {
	key, err := jobKey(jobID, name)
	if err != nil {
		return err
	}
	return s.put(ctx, key, r, size)
}

// GetJobInput opens a job's input document; ENOTFOUND if absent. The caller
// closes the reader.
func (s *Store) GetJobInput(ctx context.Context, jobID, name string) (io.ReadCloser, error) {
	key, err := jobKey(jobID, name)
	if err != nil {
		return nil, err
	}
	return s.get(ctx, s.bucket, key)
}

// DeleteJobFiles removes every object stored under a job.
func (s *Store) DeleteJobFiles(ctx context.Context, jobID string) error {
	p, err := jobPrefix(jobID)
	if err != nil {
		return err
	}
	return s.deletePrefix(ctx, p)
}

// DeleteJobFilesWithPrefix removes the objects of a job whose names start
// with prefix (e.g. its intermediate training state once it has ended).
func (s *Store) DeleteJobFilesWithPrefix(ctx context.Context, jobID, prefix string) error {
	p, err := jobPrefix(jobID)
	if err != nil {
		return err
	}
	if prefix == "" || strings.ContainsAny(prefix, "/\\") {
		return trainyard.Errorf(trainyard.EINVALID, "invalid job file prefix %q", prefix)
	}
	return s.deletePrefix(ctx, p+prefix)
}

// JobFileNames lists the names of the objects stored under a job.
func (s *Store) JobFileNames(ctx context.Context, jobID string) ([]string, error) {
	p, err := jobPrefix(jobID)
	if err != nil {
		return nil, err
	}
	var names []string
	pages := awss3.NewListObjectsV2Paginator(s.client, &awss3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(p)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, translate(err, "objects of job %s", jobID)
		}
		for _, o := range page.Contents {
			names = append(names, strings.TrimPrefix(aws.ToString(o.Key), p))
		}
	}
	return names, nil
}

// put uploads r to key. The SDK must read a body twice over plain HTTP
// (checksum, then send) and again on a retry, so an unseekable r is first
// spooled to memory or, when large, to a temporary file.
func (s *Store) put(ctx context.Context, key string, r io.Reader, size int64) error {
	return s.putKeeping(ctx, key, r, size, false)
}

// putKeeping is put; with keep, it also keeps the object's bytes and ETag in s.recent (when it is small
// enough), for a read of it soon after.
func (s *Store) putKeeping(ctx context.Context, key string, r io.Reader, size int64, keep bool) error {
	s.recent.drop(key)
	body, length, cleanup, err := seekable(r, size)
	if err != nil {
		return fmt.Errorf("read object %s: %w", key, err)
	}
	defer cleanup()
	out, err := s.client.PutObject(ctx, &awss3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          body,
		ContentLength: aws.Int64(length),
	})
	if err != nil {
		return translate(err, "object %s", key)
	}
	etag := aws.ToString(out.ETag)
	if keep && etag != "" && length <= recentMaxFile {
		data := make([]byte, length)
		if _, err := body.Seek(0, io.SeekStart); err == nil {
			if _, err := io.ReadFull(body, data); err == nil {
				s.recent.put(key, etag, data)
			}
		}
	}
	return nil
}

// getRecent opens key, from s.recent when the server says the object is still the one kept there.
func (s *Store) getRecent(ctx context.Context, key string) (io.ReadCloser, error) {
	f, ok := s.recent.get(key)
	if !ok {
		return s.get(ctx, s.bucket, key)
	}
	out, err := s.client.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key),
		IfNoneMatch: aws.String(f.etag)})
	if statusOf(err) == http.StatusNotModified {
		s.recentHits.Add(1)
		return io.NopCloser(bytes.NewReader(f.data)), nil
	}
	s.recent.drop(key)
	if err != nil {
		return nil, translate(err, "object %s", key)
	}
	return out.Body, nil
}

func (s *Store) get(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	out, err := s.client.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, translate(err, "object %s", key)
	}
	return out.Body, nil
}

// deletePrefix deletes every object whose key starts with prefix, listing
// and deleting one page (up to 1000 keys) at a time.
func (s *Store) deletePrefix(ctx context.Context, prefix string) error {
	s.recent.dropPrefix(prefix)
	pages := awss3.NewListObjectsV2Paginator(s.client, &awss3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(prefix),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return translate(err, "objects under %s", prefix)
		}
		for start := 0; start < len(page.Contents); start += deleteBatch {
			batch := page.Contents[start:min(start+deleteBatch, len(page.Contents))]
			ids := make([]types.ObjectIdentifier, len(batch))
			for i, o := range batch {
				ids[i] = types.ObjectIdentifier{Key: o.Key}
			}
			out, err := s.client.DeleteObjects(ctx, &awss3.DeleteObjectsInput{
				Bucket: aws.String(s.bucket),
				Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
			})
			if err != nil {
				return translate(err, "delete objects under %s", prefix)
			}
			if len(out.Errors) > 0 {
				e := out.Errors[0]
				return fmt.Errorf("delete objects under %s: %d failed, first %s: %s %s",
					prefix, len(out.Errors), aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
			}
		}
	}
	return nil
}

// seekable returns r as a ReadSeeker with its length. A ReadSeeker is used
// as is (from its current offset); anything else is copied into memory or a
// temporary file, removed by cleanup. A known size must match what r holds.
func seekable(r io.Reader, size int64) (io.ReadSeeker, int64, func(), error) {
	nop := func() {}
	if rs, ok := r.(io.ReadSeeker); ok {
		cur, err := rs.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, 0, nop, err
		}
		end, err := rs.Seek(0, io.SeekEnd)
		if err != nil {
			return nil, 0, nop, err
		}
		if _, err := rs.Seek(cur, io.SeekStart); err != nil {
			return nil, 0, nop, err
		}
		if size >= 0 && end-cur != size {
			return nil, 0, nop, trainyard.Errorf(trainyard.EINVALID, "object body holds %d bytes, not the %d declared", end-cur, size)
		}
		return rs, end - cur, nop, nil
	}
	if size >= 0 && size <= spoolInMemory {
		buf := make([]byte, size)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, 0, nop, trainyard.WrapError(trainyard.EINVALID, err, "object body is shorter than the %d bytes declared", size)
		}
		return bytes.NewReader(buf), size, nop, nil
	}
	f, err := os.CreateTemp("", "trainyard-upload-*")
	if err != nil {
		return nil, 0, nop, err
	}
	cleanup := func() { f.Close(); os.Remove(f.Name()) }
	n, err := io.Copy(f, r)
	if err == nil && size >= 0 && n != size {
		err = trainyard.Errorf(trainyard.EINVALID, "object body holds %d bytes, not the %d declared", n, size)
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		cleanup()
		return nil, 0, nop, err
	}
	return f, n, cleanup, nil
}
