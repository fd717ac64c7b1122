package s3

import (
	"context"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/trainyard/trainyard"
)

// filesPrefix holds the files accounts upload (SFT training data):
//
//	files/<account id>/<name, slash-separated segments>
const filesPrefix = "files/"

// fileKey builds the key of an account's file, checking every segment of
// name so no name can reach outside the account's prefix.
func fileKey(accountID, name string) (string, error) {
	if err := checkSegment("account id", accountID); err != nil {
		return "", err
	}
	for _, seg := range strings.Split(name, "/") {
		if err := checkSegment("file name segment", seg); err != nil {
			return "", err
		}
	}
	return filesPrefix + accountID + "/" + name, nil
}

// PutFile stores a file an account uploaded. size is the exact length of r,
// or -1 when unknown.
func (s *Store) PutFile(ctx context.Context, accountID, name string, r io.Reader, size int64) error {
	key, err := fileKey(accountID, name)
	if err != nil {
		return err
	}
	return s.put(ctx, key, r, size)
}

// GetFile opens a file an account uploaded; ENOTFOUND if absent. The caller
// closes the reader.
func (s *Store) GetFile(ctx context.Context, accountID, name string) (io.ReadCloser, error) {
	key, err := fileKey(accountID, name)
	if err != nil {
		return nil, err
	}
	return s.get(ctx, s.bucket, key)
}

// HasFile reports whether an account uploaded a file under name, without
// reading it.
func (s *Store) HasFile(ctx context.Context, accountID, name string) (bool, error) {
	key, err := fileKey(accountID, name)
	if err != nil {
		return false, err
	}
	_, err = s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	switch err = translate(err, "object %s", key); {
	case err == nil:
		return true, nil
	case trainyard.ErrorCode(err) == trainyard.ENOTFOUND:
		return false, nil
	}
	return false, err
}
