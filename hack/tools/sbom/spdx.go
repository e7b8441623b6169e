package main

import (
	"debug/buildinfo"
	"fmt"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
)

// SPDX 2.3 JSON, the fields this tool fills (https://spdx.github.io/spdx-spec/v2.3/).
type document struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      creationInfo   `json:"creationInfo"`
	Packages          []pkg          `json:"packages"`
	Relationships     []relationship `json:"relationships"`

	ids map[string]bool
}

type creationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type pkg struct {
	SPDXID           string        `json:"SPDXID"`
	Name             string        `json:"name"`
	VersionInfo      string        `json:"versionInfo,omitempty"`
	DownloadLocation string        `json:"downloadLocation"`
	FilesAnalyzed    bool          `json:"filesAnalyzed"`
	ExternalRefs     []externalRef `json:"externalRefs,omitempty"`
	Comment          string        `json:"comment,omitempty"`
	PrimaryPurpose   string        `json:"primaryPackagePurpose,omitempty"`
}

type externalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type relationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

func newDocument(name, version, created, namespace string) *document {
	return &document{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name:              name + "-" + version,
		DocumentNamespace: strings.TrimSuffix(namespace, "/") + "/" + name + "-" + version,
		CreationInfo:      creationInfo{Created: created, Creators: []string{"Tool: etcd-operator-hack-tools-sbom"}},
		ids:               map[string]bool{},
	}
}

var idUnsafe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func spdxID(parts ...string) string {
	return "SPDXRef-" + strings.Trim(idUnsafe.ReplaceAllString(strings.Join(parts, "-"), "-"), "-")
}

// addBinary adds the binary (described by the document), its main module and every dependency
// (each module once per document; the binaries depend on them).
func (d *document) addBinary(file, version, platform string, info *buildinfo.BuildInfo) {
	binID := spdxID("binary", file, platform)
	d.Packages = append(d.Packages, pkg{
		SPDXID: binID, Name: file, VersionInfo: version, DownloadLocation: "NOASSERTION",
		Comment:        fmt.Sprintf("%s, %s, built with %s from %s", platform, info.Path, info.GoVersion, info.Main.Path),
		PrimaryPurpose: "APPLICATION",
	})
	d.Relationships = append(d.Relationships, relationship{"SPDXRef-DOCUMENT", "DESCRIBES", binID})
	d.Relationships = append(d.Relationships, relationship{binID, "DEPENDS_ON", d.addModule(&info.Main, version)})
	d.Relationships = append(d.Relationships, relationship{binID, "DEPENDS_ON",
		d.addModule(&debug.Module{Path: "stdlib", Version: info.GoVersion}, "")})
	for _, m := range info.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		d.Relationships = append(d.Relationships, relationship{binID, "DEPENDS_ON", d.addModule(m, "")})
	}
}

func (d *document) addModule(m *debug.Module, mainVersion string) string {
	v := m.Version
	if v == "(devel)" || v == "" {
		v = mainVersion
	}
	id := spdxID("module", m.Path, v)
	if d.ids[id] {
		return id
	}
	d.ids[id] = true
	p := pkg{SPDXID: id, Name: m.Path, VersionInfo: v, DownloadLocation: "NOASSERTION", PrimaryPurpose: "LIBRARY"}
	if m.Path != "stdlib" && v != "" {
		p.ExternalRefs = []externalRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/" + m.Path + "@" + v}}
	} else if m.Path == "stdlib" {
		p.ExternalRefs = []externalRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/stdlib@" + strings.TrimPrefix(v, "go")}}
	}
	if h, ok := strings.CutPrefix(m.Sum, "h1:"); ok {
		// go.sum's h1: hash (SHA-256 over the module's files, base64) is no SPDX checksum
		// (those hash the archive, in hex): kept as a comment.
		p.Comment = "go.sum h1:" + h
	}
	d.Packages = append(d.Packages, p)
	return id
}

func (d *document) sort() {
	sort.SliceStable(d.Packages, func(i, j int) bool { return d.Packages[i].SPDXID < d.Packages[j].SPDXID })
}
