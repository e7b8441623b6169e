package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// caBundle returns the public CA roots the Go binaries embed (x509roots/fallback) as one PEM
// bundle, in the bundle's order, and how many certificates it holds. Roots that the bundle
// trusts only with a constraint (e.g. for certificates issued before a distrust date) are left
// out: a PEM file cannot carry the constraint, and tools reading it would trust them fully.
func caBundle() ([]byte, int, error) {
	var buf bytes.Buffer
	n := 0
	for c := range bundle.Roots() {
		if c.Constraint != nil {
			continue
		}
		cert, err := x509.ParseCertificate(c.Certificate)
		if err != nil {
			return nil, 0, fmt.Errorf("parsing a fallback root: %w", err)
		}
		fmt.Fprintf(&buf, "# %s\n", cert.Subject)
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate}); err != nil {
			return nil, 0, err
		}
		n++
	}
	return buf.Bytes(), n, nil
}
