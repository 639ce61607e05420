package docs

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestPackageDocComments: every package of the repository (go list ./..., and the tool modules
// under hack/) has exactly one package doc comment, "// Package <name> ..." ("// Command
// <directory> ..." for a main package), saying what the package owns.
func TestPackageDocComments(t *testing.T) {
	dirs, err := packageDirs()
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no package found")
	}
	for _, dir := range dirs {
		problems, err := packageDocProblems(dir)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", filepath.ToSlash(rel), p)
		}
	}
}

// TestPackageDocProblemsAreFound: the check above finds a package without a doc comment, one
// with doc comments in two files and one whose comment does not start with its name; it
// accepts a comment in a test-only package, in a file behind a build constraint, or above the
// package clause of a command, and leaves external test files (package x_test) out of a
// package that has files of its own.
func TestPackageDocProblemsAreFound(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"none", map[string]string{
			"a.go": "// A comment, not the package's.\n\npackage a\n",
			"b.go": "package a\n",
		}, []string{`no package doc comment: one file of package a should start with "// Package a ..."`}},
		{"two", map[string]string{
			"a.go": "// Package a owns a.\npackage a\n",
			"b.go": "// Package a owns b.\npackage a\n",
		}, []string{"package doc comments in 2 files (a.go, b.go): keep one"}},
		{"wrong name", map[string]string{
			"a.go": "// Package b owns a.\npackage a\n",
		}, []string{`a.go: the package doc comment starts "Package b owns a.", not "Package a "`}},
		{"command", map[string]string{
			"main.go": "// Command cmd runs.\npackage main\n",
		}, nil},
		{"command as package", map[string]string{
			"main.go": "// Package main runs.\npackage main\n",
		}, []string{`main.go: the package doc comment starts "Package main runs.", not "Command cmd "`}},
		{"only in an external test", map[string]string{
			"a.go":      "package a\n",
			"a_test.go": "// Package a_test tests a.\npackage a_test\n",
		}, []string{`no package doc comment: one file of package a should start with "// Package a ..."`}},
		{"external tests only", map[string]string{
			"a_test.go": "// Package a_test checks the packages under it.\npackage a_test\n",
			"b_test.go": "package a_test\n",
		}, nil},
		{"in-package tests only", map[string]string{
			"a_test.go": "// Package a holds tests.\npackage a\n",
		}, nil},
		{"build constraint", map[string]string{
			"tools.go": "//go:build tools\n\n// Package a pins tools.\npackage a\n",
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cmd")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, text := range c.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := packageDocProblems(dir)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// packageDirs lists the directories of the repository's packages: those go list finds in the
// main module, and every directory with Go files in a module of its own (the tool modules of
// hack/, which go list ./... leaves out and which are not worth loading here).
func packageDirs() ([]string, error) {
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list ./...: %w: %s", err, stderr.String())
	}
	seen := map[string]bool{}
	var dirs []string
	add := func(dir string) {
		if !seen[dir] {
			seen[dir] = true
			dirs = append(dirs, dir)
		}
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(abs, dir)
		if err != nil {
			return nil, err
		}
		add(filepath.Join(root, rel))
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "bin" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if dir := filepath.Dir(path); strings.HasSuffix(d.Name(), ".go") && nestedModule(dir) {
			add(dir)
		}
		return nil
	})
	sort.Strings(dirs)
	return dirs, err
}

// nestedModule tells whether dir lies in a module other than the main one: a go.mod sits in it
// or in a directory between it and the repository's root.
func nestedModule(dir string) bool {
	for d := dir; d != root && d != "." && d != string(filepath.Separator); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return true
		}
	}
	return false
}

// packageDocProblems checks the package doc comment of the package in dir. The package is the
// one its files that are not external tests (package x_test) declare; in a directory of
// external tests only, it is theirs. Files behind build constraints count: a doc comment is
// read whatever the build.
func packageDocProblems(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	type file struct {
		name, pkg, doc string
		hasDoc         bool
	}
	var files []file
	names := map[string]bool{}
	for _, path := range paths {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return nil, err
		}
		fl := file{name: filepath.Base(path), pkg: f.Name.Name}
		if f.Doc != nil {
			fl.doc, fl.hasDoc = f.Doc.Text(), strings.TrimSpace(f.Doc.Text()) != ""
		}
		files = append(files, fl)
		names[fl.pkg] = true
	}
	if len(files) == 0 {
		return nil, nil
	}
	pkg := ""
	for name := range names {
		if !strings.HasSuffix(name, "_test") {
			if pkg != "" {
				return []string{fmt.Sprintf("two packages in one directory: %s and %s", pkg, name)}, nil
			}
			pkg = name
		}
	}
	if pkg == "" {
		for name := range names {
			pkg = name
		}
	}
	want := "Package " + pkg + " "
	if pkg == "main" {
		want = "Command " + filepath.Base(dir) + " "
	}
	var documented []string
	var problems []string
	for _, f := range files {
		if f.pkg != pkg || !f.hasDoc {
			continue
		}
		documented = append(documented, f.name)
		if !strings.HasPrefix(f.doc, want) {
			first, _, _ := strings.Cut(f.doc, "\n")
			problems = append(problems, fmt.Sprintf("%s: the package doc comment starts %q, not %q", f.name, first, want))
		}
	}
	switch {
	case len(documented) == 0:
		problems = append(problems, fmt.Sprintf("no package doc comment: one file of package %s should start with %q", pkg, "// "+want+"..."))
	case len(documented) > 1:
		problems = append(problems, fmt.Sprintf("package doc comments in %d files (%s): keep one", len(documented), strings.Join(documented, ", ")))
	}
	return problems, nil
}
