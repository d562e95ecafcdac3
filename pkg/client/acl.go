package client

import "github.com/rmqgo/rmq/pkg/credentials"

// Credentials sign every request for brokers with authentication (ACL 2.0)
// or ACL 1.0 enabled (docs/protocol.md §7): set CommonConfig.Credentials of
// a producer's or consumer's config. With ACL 2.0 the AccessKey is the
// username and the SecretKey its password.
type Credentials = credentials.Credentials
