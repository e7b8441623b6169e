// Package codec compresses (zstd) and encrypts (age, X25519 recipients) backup objects on their
// way into an object store, and undoes both on the way out.
//
// The order is plaintext -> zstd -> age -> stored bytes, so that a user holding the key can
// recover an object by hand with the standard tools:
//
//	age -d -i key.txt backup.db.age | zstd -d > backup.db
//
// Objects are self-describing: a reader sniffs the format from the first bytes (the age header
// "age-encryption.org/v1\n", the zstd frame magic 28 B5 2F FD) and needs no metadata beside the
// object. Plain etcd snapshots (bbolt files) and plain capture segments start with neither and
// pass through unchanged, so objects written before compression or encryption was turned on stay
// readable.
//
// Memory is bounded and independent of the object size: the zstd encoder and decoder run on the
// calling goroutine with a window of at most 8 MiB when encoding and 64 MiB when decoding (a
// hostile frame asking for more is refused), and age works in 64 KiB chunks.
package codec

import (
	"bytes"
	"errors"

	"filippo.io/age"
)

// Errors NewReader and the Read of the stream it returns wrap; match with errors.Is.
var (
	// ErrNoKey: the object is encrypted and no identity was given to decrypt it.
	ErrNoKey = errors.New("object is encrypted and no age identity was given")
	// ErrWrongKey: the object is encrypted and none of the identities given can decrypt it. The
	// error also wraps the *age.NoIdentityMatchError saying what was tried.
	ErrWrongKey = errors.New("no age identity given matches the object's recipients")
	// ErrCorrupt: the object is not what it claims to be: a damaged or tampered header, a chunk
	// that fails authentication, a stream cut short, or an invalid zstd frame. Errors reading the
	// source itself (a network failure) are returned as they are, without ErrCorrupt.
	ErrCorrupt = errors.New("object is corrupt or truncated")
)

// The magic prefixes Sniff recognises.
var (
	// ageMagic is the first line of every binary age file (the ASCII-armored form, which we
	// never write, starts differently and is read as plain).
	ageMagic = []byte("age-encryption.org/v1\n")
	// zstdMagic is the little-endian frame magic 0xFD2FB528 of a zstd frame.
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// SniffLen is how many leading bytes of an object Sniff needs to tell every format apart (the
// length of the age header line).
const SniffLen = 22

// Format says how a stored object is encoded.
type Format struct {
	// Compressed: the plaintext was compressed with zstd (before encryption, if any).
	Compressed bool
	// Encrypted: the (possibly compressed) data was encrypted with age.
	Encrypted bool
}

// String names the format by the encodings applied, in the order they were applied: "plain",
// "zstd", "age" or "zstd+age". It is meant for logs, events and metrics labels.
func (f Format) String() string {
	switch {
	case f.Compressed && f.Encrypted:
		return "zstd+age"
	case f.Compressed:
		return "zstd"
	case f.Encrypted:
		return "age"
	default:
		return "plain"
	}
}

// Options says how NewWriter encodes an object. The zero Options writes plain bytes.
type Options struct {
	// Compress compresses with zstd at the default level (SpeedDefault), on the writing
	// goroutine (encoder concurrency 1), with a window of at most 8 MiB.
	Compress bool
	// Recipients encrypt with age to each of them; empty means not encrypted. Anyone holding
	// the identity of one recipient can decrypt.
	Recipients []age.Recipient
}

// Format returns the format an object written with these options has.
func (o Options) Format() Format {
	return Format{Compressed: o.Compress, Encrypted: len(o.Recipients) > 0}
}

// Sniff reports the outer format of an object from a prefix of it, without reading further.
// Give it at least SniffLen bytes when the object is that long; a shorter prefix of a longer
// object may be reported as plain. For an encrypted object Compressed is false: whether it is
// compressed is only known inside the encryption (NewReader reports it after decrypting).
func Sniff(prefix []byte) Format {
	switch {
	case bytes.HasPrefix(prefix, ageMagic):
		return Format{Encrypted: true}
	case bytes.HasPrefix(prefix, zstdMagic):
		return Format{Compressed: true}
	default:
		return Format{}
	}
}
