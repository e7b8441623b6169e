package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// api is what the reference shows: the types of one API package.
type api struct {
	group, version string
	types          map[string]*typeDoc
	order          []string // file order (files sorted by name), then declaration order
	consts         []constGroup
}

type typeDoc struct {
	name    string
	doc     []string // comment lines without markers
	markers []string // +kubebuilder:... and friends, without the "+"
	root    bool     // +kubebuilder:object:root=true
	fields  []fieldDoc
	// underlying is the Go type of a non-struct type (e.g. string for an enum).
	underlying string
	enum       []string // values of the constants of this type
}

type fieldDoc struct {
	name     string // JSON name; empty for an inlined struct
	typ      ast.Expr
	doc      []string
	markers  []string
	inline   bool
	optional bool
}

type constGroup struct {
	doc    []string
	values []constDoc
}

type constDoc struct {
	name, value string
	doc         []string
}

func parseAPI(dir string) (*api, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") && !strings.HasPrefix(n, "zz_generated") {
			files = append(files, n)
		}
	}
	sort.Strings(files)
	a := &api{types: map[string]*typeDoc{}}
	typed := map[string][]string{} // type name -> constant values, in order
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, c := range f.Comments {
			for _, l := range c.List {
				if v, ok := strings.CutPrefix(l.Text, "// +groupName="); ok {
					a.group = v
				}
			}
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			switch gd.Tok {
			case token.TYPE:
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					if !ts.Name.IsExported() {
						continue
					}
					cg := ts.Doc
					if cg == nil {
						cg = gd.Doc
					}
					td := &typeDoc{name: ts.Name.Name}
					td.doc, td.markers = splitComment(cg)
					for _, m := range td.markers {
						if m == "kubebuilder:object:root=true" {
							td.root = true
						}
					}
					if st, ok := ts.Type.(*ast.StructType); ok {
						for _, fl := range st.Fields.List {
							td.fields = append(td.fields, parseField(fl))
						}
					} else {
						td.underlying = exprString(ts.Type)
					}
					a.types[td.name] = td
					a.order = append(a.order, td.name)
				}
			case token.CONST:
				var g constGroup
				g.doc, _ = splitComment(gd.Doc)
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if !n.IsExported() || i >= len(vs.Values) {
							continue
						}
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok {
							continue
						}
						v := lit.Value
						if s, err := strconv.Unquote(v); err == nil {
							v = s
						}
						cd := constDoc{name: n.Name, value: v}
						cd.doc, _ = splitComment(vs.Doc)
						if vs.Type != nil {
							t := exprString(vs.Type)
							typed[t] = append(typed[t], v)
						}
						g.values = append(g.values, cd)
					}
				}
				if len(g.values) > 0 {
					a.consts = append(a.consts, g)
				}
			}
		}
	}
	for t, vals := range typed {
		if td := a.types[t]; td != nil {
			td.enum = vals
		}
	}
	if a.group == "" {
		return nil, fmt.Errorf("no +groupName marker in %s", dir)
	}
	a.version = filepath.Base(dir)
	return a, nil
}

func parseField(fl *ast.Field) fieldDoc {
	fd := fieldDoc{typ: fl.Type}
	fd.doc, fd.markers = splitComment(fl.Doc)
	if fl.Tag != nil {
		tag, _ := strconv.Unquote(fl.Tag.Value)
		j := reflect.StructTag(tag).Get("json")
		parts := strings.Split(j, ",")
		fd.name = parts[0]
		for _, p := range parts[1:] {
			switch p {
			case "inline":
				fd.inline = true
			case "omitempty", "omitzero":
				fd.optional = true
			}
		}
	}
	if len(fl.Names) == 0 && fd.name == "" {
		fd.inline = true
	}
	for _, m := range fd.markers {
		switch m {
		case "optional", "kubebuilder:validation:Optional":
			fd.optional = true
		case "required", "kubebuilder:validation:Required":
			fd.optional = false
		}
	}
	return fd
}

// splitComment separates a doc comment into text lines and marker lines ("+..." without "+").
func splitComment(cg *ast.CommentGroup) (doc, markers []string) {
	if cg == nil {
		return nil, nil
	}
	for _, l := range cg.List {
		t := strings.TrimPrefix(l.Text, "//")
		t = strings.TrimPrefix(t, " ")
		if m, ok := strings.CutPrefix(strings.TrimSpace(t), "+"); ok {
			markers = append(markers, m)
			continue
		}
		doc = append(doc, t)
	}
	for len(doc) > 0 && strings.TrimSpace(doc[len(doc)-1]) == "" {
		doc = doc[:len(doc)-1]
	}
	return doc, markers
}

func exprString(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.StarExpr:
		return "*" + exprString(t.X)
	case *ast.ArrayType:
		return "[]" + exprString(t.Elt)
	case *ast.MapType:
		return "map[" + exprString(t.Key) + "]" + exprString(t.Value)
	case *ast.SelectorExpr:
		return exprString(t.X) + "." + t.Sel.Name
	}
	return fmt.Sprintf("%T", e)
}
