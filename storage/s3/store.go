// Package s3 implements trainyard.BlobStore on any S3-compatible object store
// (AWS S3, MinIO, versitygw) with aws-sdk-go-v2. Object keys are decided here
// and nowhere else; SDK errors are translated here into trainyard codes.
package s3

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/trainyard/trainyard"
)

// Compile-time check that Store is a BlobStore.
var _ trainyard.BlobStore = (*Store)(nil)

// Config says where the store is. Endpoint is empty for AWS itself; set it
// (with UsePathStyle) for MinIO, versitygw and other S3-compatible servers.
// Without AccessKeyID, credentials come from the AWS default chain
// (environment, shared files, instance role).
type Config struct {
	Endpoint        string
	Region          string
	AccessKeyID     string
	SecretAccessKey string
	Bucket          string
	UsePathStyle    bool
	// ReadBuckets are the other buckets whose objects users may name as
	// s3:// training data (GetURL); the store's own bucket never is one.
	ReadBuckets []string
}

// Store is a BlobStore on one bucket. It is safe for concurrent use.
type Store struct {
	client      *awss3.Client
	bucket      string
	readBuckets []string
	recent      recentFiles // the checkpoint files this process stored last (recent.go)
	recentHits  atomic.Int64
}

// New builds a Store. It does not contact the server; call EnsureBucket or
// Ping for that.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, trainyard.Errorf(trainyard.EINVALID, "s3: a bucket name is required")
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	var awsCfg aws.Config
	if cfg.AccessKeyID != "" {
		awsCfg = aws.Config{
			Region:      cfg.Region,
			Credentials: credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, ""),
		}
	} else {
		var err error
		awsCfg, err = config.LoadDefaultConfig(ctx, config.WithRegion(cfg.Region))
		if err != nil {
			return nil, fmt.Errorf("s3: load AWS configuration: %w", err)
		}
	}
	client := awss3.NewFromConfig(awsCfg, func(o *awss3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.UsePathStyle
		// Servers that return no checksum (versitygw, MinIO without one
		// stored) would otherwise log a warning on every download.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	return &Store{client: client, bucket: cfg.Bucket, readBuckets: cfg.ReadBuckets}, nil
}

// Bucket returns the name of the store's bucket.
func (s *Store) Bucket() string { return s.bucket }

// EnsureBucket creates the bucket unless it exists already.
func (s *Store) EnsureBucket(ctx context.Context) error {
	in := &awss3.CreateBucketInput{Bucket: aws.String(s.bucket)}
	// us-east-1 is the one region that must not be named as a location.
	if r := s.client.Options().Region; r != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(r)}
	}
	_, err := s.client.CreateBucket(ctx, in)
	var owned *types.BucketAlreadyOwnedByYou
	var exists *types.BucketAlreadyExists
	if err == nil || errors.As(err, &owned) || errors.As(err, &exists) {
		return nil
	}
	return translate(err, "create bucket %s", s.bucket)
}

// Ping checks that the bucket answers (system-check).
func (s *Store) Ping(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: aws.String(s.bucket)})
	return translate(err, "bucket %s", s.bucket)
}

// RemoveBucket deletes every object of the bucket and then the bucket. It is
// meant for tests and teardown; trainyard itself never calls it.
func (s *Store) RemoveBucket(ctx context.Context) error {
	if err := s.deletePrefix(ctx, ""); err != nil {
		return err
	}
	_, err := s.client.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: aws.String(s.bucket)})
	if err != nil && statusOf(err) != http.StatusNotFound {
		return translate(err, "delete bucket %s", s.bucket)
	}
	return nil
}
