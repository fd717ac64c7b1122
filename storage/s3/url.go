package s3

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/aws/smithy-go"

	"github.com/trainyard/trainyard"
)

// GetURL opens the object an s3://bucket/key URL names (an SFT
// training_data_url) with the store's credentials. The URL must pass the
// store's read policy: never the store's own bucket (its objects are read
// only by keys built from ids, so no account reaches another's uploads), and
// other buckets only from Config.ReadBuckets. Anything else is EINVALID.
func (s *Store) GetURL(ctx context.Context, rawURL string) (io.ReadCloser, error) {
	obj, err := s.ReadPolicy().Check(rawURL)
	if err != nil {
		return nil, trainyard.Errorf(trainyard.EINVALID, "%s", err.Error())
	}
	rc, err := s.get(ctx, obj.Bucket, obj.Key)
	if st := statusOf(err); st >= 400 && st < 500 && st != http.StatusNotFound && st != http.StatusRequestTimeout && st != http.StatusTooManyRequests {
		// The URL is the user's: a bucket name the server rejects or an
		// object it will not let us read does not get better on retry.
		reason := http.StatusText(st)
		var ae smithy.APIError
		if errors.As(err, &ae) {
			reason = ae.ErrorCode() + ": " + ae.ErrorMessage()
		}
		return nil, trainyard.WrapError(trainyard.EINVALID, err, "S3 refused %s (HTTP %d, %s)", rawURL, st, reason)
	}
	return rc, err
}

// ReadPolicy is the store's rule for user-supplied s3:// URLs.
func (s *Store) ReadPolicy() trainyard.S3ReadPolicy {
	return trainyard.S3ReadPolicy{OwnBucket: s.bucket, ReadBuckets: s.readBuckets}
}
