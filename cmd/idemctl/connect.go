package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// connect builds the client from the AWS configuration, on endpoint if set.
// It retrieves the credentials first, so that their absence is said as
// such, once, instead of as the instance-metadata error of every call the
// SDK retries.
func connect(ctx context.Context, endpoint string) (client, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS config: %w", err)
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return nil, credentialsError(cfg.Credentials, err)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}), nil
}

// howToGiveCredentials is what an operator without credentials can do.
const howToGiveCredentials = "set AWS_PROFILE to a profile made by `aws configure` (or `aws sso login` for an SSO one), " +
	"or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run where an IAM role is attached; " +
	"a local engine (-endpoint) takes any key pair"

// credentialsError says why the credentials could not be retrieved. The
// SDK's default chain ends at the EC2 instance-metadata role: when that is
// the provider it chose, nothing was configured anywhere else (no keys in
// the environment, no profile with credentials), and its failure means
// that no credentials were found. Any other provider was configured and
// failed (an SSO session expired, a role that cannot be assumed).
func credentialsError(p aws.CredentialsProvider, err error) error {
	if aws.IsCredentialsProvider(p, (*ec2rolecreds.Provider)(nil)) {
		return fmt.Errorf("no AWS credentials found: %s (the last place the SDK looked, EC2 instance metadata, said: %w)", howToGiveCredentials, err)
	}
	return fmt.Errorf("AWS credentials could not be retrieved: %w", err)
}
