package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3Config is where an S3 store lives. Credentials are not here: they
// come from the AWS SDK's default chain (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE and the shared
// files, a role on the host).
type S3Config struct {
	// Endpoint is the service's URL (MinIO, R2, a fake in tests). Empty:
	// the SDK's, which reads AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL,
	// then AWS's own endpoint for the region.
	Endpoint string
	// Bucket holds the store; it must exist.
	Bucket string
	// Prefix is put before every key (with a slash); empty: none.
	Prefix string
	// Region signs the requests. Empty: the SDK's (AWS_REGION, the
	// profile), else us-east-1, which S3-compatible services accept.
	Region string
	// UsePathStyle addresses the bucket in the path (endpoint/bucket/key)
	// instead of the host name (bucket.endpoint/key), as MinIO and
	// services on an IP address need.
	UsePathStyle bool
	// Credentials, when set, replace the default chain (tests, embedders
	// with their own).
	Credentials aws.CredentialsProvider
}

// S3 is a Store in a bucket of S3-compatible object storage (AWS S3,
// MinIO, Cloudflare R2): each key is an object under the prefix. A
// PutObject is atomic (a reader sees the old object or the new one), and
// PutIfAbsent is a conditional PutObject (If-None-Match: *), which the
// service refuses with 412 Precondition Failed when the key exists:
// exactly one of racing writers gets its object in.
type S3 struct {
	c      *s3.Client
	bucket string
	prefix string
}

// NewS3 is the store cfg names. It does not reach the service: a wrong
// endpoint, bucket or credential shows at the first call.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("store: s3: no bucket")
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	if prefix != "" {
		if err := checkKey(prefix); err != nil {
			return nil, fmt.Errorf("store: s3 prefix: %w", err)
		}
	}
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(cfg.Credentials))
	}
	ac, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("store: s3: %w", err)
	}
	if ac.Region == "" {
		ac.Region = "us-east-1"
	}
	c := s3.NewFromConfig(ac, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.UsePathStyle
		// Checksums only where S3 requires them: the SDK's default
		// (a trailing CRC in an aws-chunked body) is not understood by
		// every S3-compatible service.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &S3{c: c, bucket: cfg.Bucket, prefix: prefix}, nil
}

// String names the store: s3://bucket/prefix.
func (s *S3) String() string {
	if s.prefix == "" {
		return "s3://" + s.bucket
	}
	return "s3://" + s.bucket + "/" + s.prefix
}

// object is key's object name, or an error naming a key that is not one.
func (s *S3) object(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	if s.prefix == "" {
		return key, nil
	}
	return s.prefix + "/" + key, nil
}

// body is value as a seekable body, which the SDK signs (and rewinds
// to retry).
func body(value io.Reader) (io.ReadSeeker, error) {
	if rs, ok := value.(io.ReadSeeker); ok {
		return rs, nil
	}
	b, err := io.ReadAll(value)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(b), nil
}

// Put writes value under key.
func (s *S3) Put(ctx context.Context, key string, value io.Reader) error {
	return s.put(ctx, key, value, false)
}

// PutIfAbsent writes value under key unless it holds one (a PutObject
// with If-None-Match: *).
func (s *S3) PutIfAbsent(ctx context.Context, key string, value io.Reader) error {
	return s.put(ctx, key, value, true)
}

// conflictRetries bounds the retries of a conditional write that S3
// answered with 409 ConditionalRequestConflict (another write of the key
// was in flight; the retry then gets 412 or succeeds).
const conflictRetries = 5

func (s *S3) put(ctx context.Context, key string, value io.Reader, ifAbsent bool) error {
	obj, err := s.object(key)
	if err != nil {
		return err
	}
	b, err := body(value)
	if err != nil {
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	start, err := b.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	in := &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(obj), Body: b}
	if ifAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	for try := 0; ; try++ {
		_, err = s.c.PutObject(ctx, in)
		if err == nil {
			return nil
		}
		if ifAbsent && status(err) == http.StatusPreconditionFailed {
			return fmt.Errorf("store: %s: %w", key, ErrExists)
		}
		if !ifAbsent || status(err) != http.StatusConflict || try == conflictRetries || ctx.Err() != nil {
			return fmt.Errorf("store: put %s: %w", key, err)
		}
		if _, err := b.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("store: put %s: %w", key, err)
		}
	}
}

// Get opens the value under key.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	obj, err := s.object(key)
	if err != nil {
		return nil, err
	}
	out, err := s.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(obj)})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) || status(err) == http.StatusNotFound && apiCode(err) != "NoSuchBucket" {
			return nil, fmt.Errorf("store: %s: %w", key, ErrNotFound)
		}
		return nil, fmt.Errorf("store: get %s: %w", key, err)
	}
	return out.Body, nil
}

// status is the HTTP status of a failed call, 0 when none came back.
func status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// apiCode is the service's error code of a failed call ("" when none).
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
