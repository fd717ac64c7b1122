package s3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/trainyard/trainyard"
)

// translate turns an SDK error into a trainyard error: a missing key or
// bucket (404) is ENOTFOUND, an unreachable server EUNAVAILABLE. Context
// errors and anything else stay wrapped, so errors.Is keeps working. subject
// names what was touched; it becomes part of the client-safe message.
func translate(err error, subject string, args ...any) error {
	if err == nil {
		return nil
	}
	subj := fmt.Sprintf(subject, args...)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", subj, err)
	}
	var noKey *types.NoSuchKey
	var notFound *types.NotFound
	var noBucket *types.NoSuchBucket
	if errors.As(err, &noKey) || errors.As(err, &notFound) || errors.As(err, &noBucket) || statusOf(err) == http.StatusNotFound {
		return trainyard.WrapError(trainyard.ENOTFOUND, err, "%s not found", subj)
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return trainyard.WrapError(trainyard.EUNAVAILABLE, err, "%s: object store unavailable", subj)
	}
	return fmt.Errorf("%s: %w", subj, err)
}

// statusOf returns the HTTP status of a failed S3 call, or 0.
func statusOf(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}
