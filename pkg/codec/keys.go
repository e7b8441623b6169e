package codec

import (
	"bytes"
	"errors"
	"fmt"

	"filippo.io/age"
)

// ParseIdentities parses age identities (private keys) from a Kubernetes Secret's data, as the
// user writes them with `age-keygen -o key.txt`: one "AGE-SECRET-KEY-1..." per line, blank lines
// and lines starting with "#" (age-keygen's "created" and "public key" comments) ignored. The
// error never quotes the data, which holds private keys.
func ParseIdentities(data []byte) ([]age.Identity, error) {
	ids, err := age.ParseIdentities(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parsing age identities: %w", err)
	}
	return ids, nil
}

// ParseRecipients parses age recipients (public keys) from a Kubernetes Secret's data: one
// "age1..." per line, blank lines and lines starting with "#" ignored. Objects are encrypted to
// every recipient, so any one of their identities decrypts them.
func ParseRecipients(data []byte) ([]age.Recipient, error) {
	rs, err := age.ParseRecipients(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parsing age recipients: %w", err)
	}
	return rs, nil
}

// RecipientsOf returns the recipient of each identity, so that one Secret holding only the
// identity (the output of age-keygen) serves for writing as well as reading. It accepts the
// identity types ParseIdentities returns (X25519, and age's post-quantum hybrid keys, which must
// not be mixed with X25519 ones when encrypting). No identities is an error, not an empty list:
// an empty Options.Recipients would silently write unencrypted objects.
func RecipientsOf(ids []age.Identity) ([]age.Recipient, error) {
	if len(ids) == 0 {
		return nil, errors.New("no age identities to derive recipients from")
	}
	rs := make([]age.Recipient, 0, len(ids))
	for i, id := range ids {
		switch id := id.(type) {
		case *age.X25519Identity:
			rs = append(rs, id.Recipient())
		case *age.HybridIdentity:
			rs = append(rs, id.Recipient())
		default:
			return nil, fmt.Errorf("age identity %d is a %T, whose recipient is not known", i+1, id)
		}
	}
	return rs, nil
}
