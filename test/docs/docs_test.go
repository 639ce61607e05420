// Package docs keeps karmadaflow's documentation (README.md at the root of the repository and
// the pages of docs/) true to the repository, without any environment (it runs in `make unit`).
// It also holds the layout docs/layout.md describes (no package of internal/ imports
// workflows/ or activities/) and the rule that every package has one doc comment.
//
// The convention for commands: every line of a ```sh, ```bash or ```shell block is a command
// (a trailing backslash continues it on the next line, and an unquoted # starts a comment); in
// a ```console block only the lines starting with "$ " are commands, the others are their
// output. Each such block must parse as bash (bash -n; a <placeholder> counts as a word), and
// each command is checked as far as it can be without a cluster:
//
//   - make TARGET... VAR=value: every target is one of the Makefile's, every variable one it uses;
//   - go run/test/build ./pkg: the package exists; `go run` flags are the program's flags;
//   - bin/worker, bin/starter (and worker, starter): every flag is one internal/options defines
//     for that component (bin/worker bootstrap and bin/worker versions take the worker's);
//   - bin/TOOL: a binary the Makefile or hack/ builds into bin/;
//   - hack/SCRIPT: an executable file of the repository;
//   - helm --set KEY=value: KEY is a value of the chart (deploy/charts/karmadaflow/values.yaml);
//   - KARMADAFLOW_X=value: X is the environment variable of a flag;
//   - every argument that names a path of the repository (deploy/..., test/..., ...) exists.
//
// Outside code blocks, inline code is checked the same way when it is a command (`make ...`,
// `go run ...`, `bin/...`, `worker ...`), a path of the repository, a worker or starter flag
// (`--flag`), a KARMADAFLOW_ variable or a Go test's name. Every relative link must point to an
// existing file, and to an existing heading when it names one. README.md links every page of
// docs/ and stays under 12 KB; a ```yaml block parses, and one starting with "# values.yaml"
// sets only values the chart has.
package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/karmadaflow/karmadaflow/internal/options"
)

// root is the repository, seen from this package's directory (where go test runs).
const root = "../.."

// maxREADMESize is the most README.md may weigh: the rest belongs in docs/.
const maxREADMESize = 12 * 1024

// foreignFlags are long flags named in inline code that are not karmadaflow's own.
var foreignFlags = map[string]string{
	"--query":         "temporal workflow signal",
	"--controllers":   "karmada-controller-manager",
	"--feature-gates": "karmada-controller-manager",
}

// doc is one Markdown file, parsed.
type doc struct {
	rel      string // path from the repository root, slash-separated
	blocks   []block
	prose    []span // inline code outside code blocks
	links    []span // link targets outside code blocks
	anchors  map[string]bool
	byteSize int
}

// block is a fenced code block.
type block struct {
	lang string
	line int // line of its first content line
	text []string
}

// span is a piece of text and the line it starts on.
type span struct {
	line int
	text string
}

// loc names a line of a file, for messages.
func (d *doc) loc(line int) string { return fmt.Sprintf("%s:%d", d.rel, line) }

func TestREADMESize(t *testing.T) {
	d := load(t, "README.md")
	if d.byteSize > maxREADMESize {
		t.Errorf("README.md is %d bytes, more than %d: move details into docs/", d.byteSize, maxREADMESize)
	}
}

// TestREADMELinksEveryDoc: every page of docs/ is reachable from the README.
func TestREADMELinksEveryDoc(t *testing.T) {
	readme := load(t, "README.md")
	linked := map[string]bool{}
	for _, l := range readme.links {
		target, _, _ := strings.Cut(l.text, "#")
		linked[path.Clean(target)] = true
	}
	pages := docPages(t)
	if len(pages) == 0 {
		t.Fatal("docs/ holds no page")
	}
	for _, p := range pages {
		if p == "README.md" {
			continue
		}
		if !linked[p] {
			t.Errorf("README.md does not link %s", p)
		}
	}
}

// TestREADMEKeepsTheTwoCommands: the README shows `make run` and `make test`, and the CI
// script runs the README's test command.
func TestREADMEKeepsTheTwoCommands(t *testing.T) {
	readme := load(t, "README.md")
	have := map[string]bool{}
	for _, c := range commands(readme) {
		have[strings.Join(c.words, " ")] = true
	}
	for _, want := range []string{"make run", "make test"} {
		if !have[want] {
			t.Errorf("README.md has no command %q in a sh block", want)
		}
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^make test$`).Match(ci) {
		t.Errorf(".ci/run does not run the README's test command `make test`")
	}
}

func TestLinks(t *testing.T) {
	n := 0
	for _, d := range loadAll(t) {
		for _, l := range d.links {
			n++
			if err := checkLink(t, d, l.text); err != nil {
				t.Errorf("%s: link %q: %v", d.loc(l.line), l.text, err)
			}
		}
	}
	t.Logf("%d links checked", n)
	if n == 0 {
		t.Error("found no link in README.md and docs/")
	}
}

func TestShellBlocksParse(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed to check the commands: %v", err)
	}
	for _, d := range loadAll(t) {
		for _, b := range d.blocks {
			if !isShell(b.lang) {
				continue
			}
			// One line of script per line of the block keeps bash's line numbers.
			script := make([]string, len(b.text))
			for _, c := range blockCommands(b) {
				script[c.line-b.line] = placeholder.ReplaceAllString(c.text, "PLACEHOLDER")
			}
			cmd := exec.Command(bash, "-n")
			cmd.Stdin = strings.NewReader(strings.Join(script, "\n") + "\n")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: the %s block does not parse as bash: %v\n%s", d.loc(b.line), b.lang, err, out)
			}
		}
	}
}

func TestCommands(t *testing.T) {
	r := newRepo(t)
	seen := map[string]int{}
	for _, d := range loadAll(t) {
		for _, c := range commands(d) {
			program := c.words[0]
			for i := 0; i+1 < len(c.words) && assignment.MatchString(c.words[i]); i++ {
				program = c.words[i+1]
			}
			seen[program]++
			for _, p := range r.checkCommand(c.words, true) {
				t.Errorf("%s: `%s`: %s", d.loc(c.line), c.text, p)
			}
		}
	}
	t.Logf("commands checked, by program: %v", seen)
	// The pages show these; finding none means the extraction broke, not that all is well.
	for _, program := range []string{"make", "go", "bin/worker", "kubectl", "helm", "temporal"} {
		if seen[program] == 0 {
			t.Errorf("found no %s command in README.md and docs/", program)
		}
	}
}

// TestInlineReferences checks inline code of the prose that names something of the repository.
func TestInlineReferences(t *testing.T) {
	r := newRepo(t)
	n := 0
	for _, d := range loadAll(t) {
		for _, s := range d.prose {
			n++
			for _, p := range r.checkInline(s.text) {
				t.Errorf("%s: `%s`: %s", d.loc(s.line), s.text, p)
			}
		}
	}
	t.Logf("%d pieces of inline code looked at", n)
	if n == 0 {
		t.Error("found no inline code in README.md and docs/")
	}
}

func TestYAMLBlocks(t *testing.T) {
	values := chartValues(t)
	for _, d := range loadAll(t) {
		for _, b := range d.blocks {
			if b.lang != "yaml" && b.lang != "yml" {
				continue
			}
			text := strings.Join(b.text, "\n")
			for i, part := range regexp.MustCompile(`(?m)^---\s*$`).Split(text, -1) {
				var v any
				if err := yaml.Unmarshal([]byte(part), &v); err != nil {
					t.Errorf("%s: YAML document %d does not parse: %v", d.loc(b.line), i+1, err)
					continue
				}
				if len(b.text) > 0 && strings.TrimSpace(b.text[0]) == "# values.yaml" {
					m, _ := v.(map[string]any)
					for _, p := range unknownKeys(m, values, "") {
						t.Errorf("%s: %s is no value of the chart deploy/charts/karmadaflow", d.loc(b.line), p)
					}
				}
			}
		}
	}
}

// ---- Markdown --------------------------------------------------------------------------

var (
	fence       = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([A-Za-z0-9_+-]*)")
	heading     = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	linkPattern = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	placeholder = regexp.MustCompile(`<[A-Za-z][A-Za-z0-9_.-]*>`)
)

func docPages(t *testing.T) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var pages []string
	for _, m := range matches {
		pages = append(pages, "docs/"+filepath.Base(m))
	}
	sort.Strings(pages)
	return pages
}

func loadAll(t *testing.T) []*doc {
	t.Helper()
	docs := []*doc{load(t, "README.md")}
	for _, p := range docPages(t) {
		docs = append(docs, load(t, p))
	}
	return docs
}

var cache = map[string]*doc{}

// load parses the Markdown file at rel (from the repository root).
func load(t *testing.T, rel string) *doc {
	t.Helper()
	if d, ok := cache[rel]; ok {
		return d
	}
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	d := parseDoc(rel, data)
	cache[rel] = d
	return d
}

func parseDoc(rel string, data []byte) *doc {
	d := &doc{rel: rel, anchors: map[string]bool{}, byteSize: len(data)}
	lines := strings.Split(string(data), "\n")
	seen := map[string]int{}
	var cur *block
	var closing string
	var prose []string // the prose lines of the current stretch, with their first line number
	proseStart := 0
	flush := func() {
		if len(prose) > 0 {
			d.scanProse(proseStart, prose)
		}
		prose = nil
	}
	for i, line := range lines {
		n := i + 1
		if cur != nil {
			if strings.HasPrefix(strings.TrimSpace(line), closing) && strings.Trim(strings.TrimSpace(line), closing[:1]) == "" {
				d.blocks = append(d.blocks, *cur)
				cur = nil
				continue
			}
			cur.text = append(cur.text, line)
			continue
		}
		if m := fence.FindStringSubmatch(line); m != nil {
			flush()
			cur = &block{lang: strings.ToLower(m[2]), line: n + 1}
			closing = m[1]
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			slug := slugify(m[2])
			if k := seen[slug]; k > 0 {
				d.anchors[fmt.Sprintf("%s-%d", slug, k)] = true
			} else {
				d.anchors[slug] = true
			}
			seen[slug]++
		}
		if len(prose) == 0 {
			proseStart = n
		}
		prose = append(prose, line)
	}
	flush()
	return d
}

// scanProse collects the inline code and the link targets of lines starting at line first.
func (d *doc) scanProse(first int, lines []string) {
	text := strings.Join(lines, "\n")
	lineOf := func(offset int) int { return first + strings.Count(text[:offset], "\n") }
	// Inline code: a run of backticks up to the next run of the same length.
	var outside strings.Builder
	for i := 0; i < len(text); {
		if text[i] != '`' {
			outside.WriteByte(text[i])
			i++
			continue
		}
		j := i
		for j < len(text) && text[j] == '`' {
			j++
		}
		ticks := text[i:j]
		end := -1
		for k := j; k < len(text); {
			idx := strings.Index(text[k:], ticks)
			if idx < 0 {
				break
			}
			k += idx
			e := k + len(ticks)
			if (k == 0 || text[k-1] != '`') && (e >= len(text) || text[e] != '`') {
				end = k
				break
			}
			for k < len(text) && text[k] == '`' {
				k++
			}
		}
		if end < 0 { // no closing run: literal backticks
			outside.WriteString(ticks)
			i = j
			continue
		}
		code := strings.Join(strings.Fields(text[j:end]), " ")
		d.prose = append(d.prose, span{line: lineOf(i), text: code})
		outside.WriteString(strings.Repeat("\n", strings.Count(text[i:end+len(ticks)], "\n")))
		outside.WriteString(" ")
		i = end + len(ticks)
	}
	rest := outside.String()
	for _, m := range linkPattern.FindAllStringSubmatchIndex(rest, -1) {
		d.links = append(d.links, span{line: first + strings.Count(rest[:m[0]], "\n"), text: rest[m[2]:m[3]]})
	}
}

// slugify makes a heading's anchor as GitHub does: lower case, punctuation dropped, spaces to
// hyphens.
func slugify(h string) string {
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func checkLink(t *testing.T, d *doc, target string) error {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return nil
	}
	file, anchor, _ := strings.Cut(target, "#")
	rel := d.rel
	if file != "" {
		rel = path.Join(path.Dir(d.rel), file)
		if strings.HasPrefix(rel, "../") || path.IsAbs(file) {
			return fmt.Errorf("points outside the repository")
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			return fmt.Errorf("no such file %s", rel)
		}
	}
	if anchor == "" {
		return nil
	}
	if !strings.HasSuffix(rel, ".md") {
		return fmt.Errorf("an anchor into %s, which is no Markdown file", rel)
	}
	in := d
	if rel != d.rel {
		in = load(t, rel)
	}
	if !in.anchors[anchor] {
		return fmt.Errorf("%s has no heading #%s", rel, anchor)
	}
	return nil
}

// ---- commands --------------------------------------------------------------------------

func isShell(lang string) bool {
	switch lang {
	case "sh", "bash", "shell", "console":
		return true
	}
	return false
}

// command is one command of a code block: its text (continuations joined) and its words.
type command struct {
	line  int
	text  string
	words []string
}

func commands(d *doc) []command {
	var out []command
	for _, b := range d.blocks {
		if isShell(b.lang) {
			out = append(out, blockCommands(b)...)
		}
	}
	return out
}

func blockCommands(b block) []command {
	var out []command
	for i := 0; i < len(b.text); i++ {
		line := b.text[i]
		if b.lang == "console" {
			if !strings.HasPrefix(line, "$ ") {
				continue
			}
			line = strings.TrimPrefix(line, "$ ")
		}
		start := i
		for strings.HasSuffix(line, "\\") && i+1 < len(b.text) {
			i++
			line = strings.TrimRight(strings.TrimSuffix(line, "\\"), " \t") + " " + strings.TrimSpace(b.text[i])
		}
		words := shellWords(line)
		if len(words) == 0 {
			continue
		}
		out = append(out, command{line: b.line + start, text: strings.TrimSpace(line), words: words})
	}
	return out
}

// shellWords splits a command line into words as a shell does (quotes removed, a comment
// dropped); operators such as | && ; are words of their own when spaced.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				j = len(line) - i - 1
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) {
					i++
				}
				cur.WriteByte(line[i])
			}
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			i = len(line)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// ---- the repository ----------------------------------------------------------------------

type repo struct {
	t            *testing.T
	targets      map[string]bool
	makeVars     map[string]bool
	binaries     map[string]bool
	topDirs      map[string]bool
	envVars      map[string]bool
	tests        map[string]bool
	chart        map[string]any
	programFlags map[string]map[string]bool // package dir -> flag -> is a bool flag
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	r := &repo{t: t, targets: map[string]bool{}, makeVars: map[string]bool{}, binaries: map[string]bool{},
		topDirs: map[string]bool{}, envVars: map[string]bool{}, tests: map[string]bool{},
		programFlags: map[string]map[string]bool{}}
	r.readMakefiles()
	r.readBinaries()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && e.Name() != "bin" {
			r.topDirs[e.Name()] = true
		}
	}
	for _, c := range []options.Component{options.Worker, options.Starter} {
		fs := componentFlags(c)
		fs.VisitAll(func(f *pflag.Flag) { r.envVars[options.EnvName(f.Name)] = true })
	}
	r.readTests()
	r.chart = chartValues(t)
	return r
}

var (
	targetLine = regexp.MustCompile(`^([A-Za-z0-9_./%-]+(?:[ \t]+[A-Za-z0-9_./%-]+)*)[ \t]*:(?:[^=]|$)`)
	varLine    = regexp.MustCompile(`^(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?:\?=|:=|::=|\+=|=)`)
	varUse     = regexp.MustCompile(`\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}]`)
	binOutput  = regexp.MustCompile(`(?:\$bin/|\$\(CURDIR\)/bin/|(?:^|[ \t"])bin/)([a-z][a-z0-9-]*)`)
)

// readMakefiles reads the Makefile and what it includes: targets, variables, the tools it
// builds into bin/.
func (r *repo) readMakefiles() {
	files := []string{"Makefile"}
	for i := 0; i < len(files); i++ {
		data, err := os.ReadFile(filepath.Join(root, files[i]))
		if err != nil {
			r.t.Fatal(err)
		}
		logical := strings.ReplaceAll(string(data), "\\\n", " ")
		for _, line := range strings.Split(logical, "\n") {
			if rest, ok := strings.CutPrefix(line, "include "); ok {
				files = append(files, strings.Fields(rest)...)
				continue
			}
			for _, m := range varUse.FindAllStringSubmatch(line, -1) {
				r.makeVars[m[1]] = true
			}
			if m := varLine.FindStringSubmatch(line); m != nil {
				r.makeVars[m[1]] = true
				if m[1] == "ENV_TOOLS" || m[1] == "KARMADA_TOOLS" {
					_, list, _ := strings.Cut(line, "=")
					for _, w := range strings.Fields(list) {
						if !strings.HasPrefix(w, "$") {
							r.binaries[w] = true
						}
					}
				}
				continue
			}
			if strings.HasPrefix(line, "\t") {
				if _, args, ok := strings.Cut(line, "ensure.sh "); ok {
					for _, w := range strings.Fields(args) {
						if !strings.HasPrefix(w, "$") {
							r.binaries[w] = true
						}
					}
				}
				for _, m := range binOutput.FindAllStringSubmatch(line, -1) {
					r.binaries[m[1]] = true
				}
				continue
			}
			if m := targetLine.FindStringSubmatch(line); m != nil {
				for _, target := range strings.Fields(m[1]) {
					if !strings.HasPrefix(target, ".") {
						r.targets[target] = true
					}
				}
			}
		}
	}
	if !r.targets["test"] || !r.targets["run"] {
		r.t.Fatalf("found no targets test and run in the Makefile (found %v)", keys(r.targets))
	}
}

// readBinaries adds the binaries hack/'s scripts build into bin/.
func (r *repo) readBinaries() {
	scripts, err := filepath.Glob(filepath.Join(root, "hack", "*.sh"))
	if err != nil {
		r.t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join(root, "hack", "*", "*.sh"))
	for _, s := range append(scripts, more...) {
		data, err := os.ReadFile(s)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`-o "\$bin/([a-z][a-z0-9-]*)"`).FindAllSubmatch(data, -1) {
			r.binaries[string(m[1])] = true
		}
		// ensure.sh's case labels: the tools it knows.
		for _, m := range regexp.MustCompile(`(?m)^\s+([a-z][a-z0-9|-]*)\)`).FindAllSubmatch(data, -1) {
			for _, name := range strings.Split(string(m[1]), "|") {
				r.binaries[name] = true
			}
		}
	}
}

// readTests collects the names of the repository's Go tests.
func (r *repo) readTests() {
	testFunc := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if p != root && (strings.HasPrefix(e.Name(), ".") || e.Name() == "bin" || e.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllSubmatch(data, -1) {
			r.tests[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

func componentFlags(c options.Component) *pflag.FlagSet {
	fs := pflag.NewFlagSet(string(c), pflag.ContinueOnError)
	options.Default(c).AddFlags(fs)
	fs.Bool("version", false, "")
	fs.Bool("help", false, "")
	fs.Bool("h", false, "")
	return fs
}

// flagsOf returns the flags of the program in dir (from the repository root) and whether each
// is a bool flag, read from the flag calls of its source.
func (r *repo) flagsOf(dir string) map[string]bool {
	if f, ok := r.programFlags[dir]; ok {
		return f
	}
	flags := map[string]bool{"h": true, "help": true}
	switch dir {
	case "worker", "starter":
		componentFlags(options.Component(dir)).VisitAll(func(f *pflag.Flag) {
			b, ok := f.Value.(interface{ IsBoolFlag() bool })
			flags[f.Name] = ok && b.IsBoolFlag()
		})
		r.programFlags[dir] = flags
		return flags
	}
	fset := token.NewFileSet()
	matches, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*.go"))
	for _, file := range matches {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			r.t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "flag" {
				return true
			}
			name := sel.Sel.Name
			index := 0
			if strings.HasSuffix(name, "Var") {
				index = 1
			}
			switch name {
			case "Bool", "BoolVar", "BoolFunc", "String", "StringVar", "Int", "IntVar", "Int64", "Int64Var",
				"Uint", "UintVar", "Uint64", "Uint64Var", "Float64", "Float64Var", "Duration", "DurationVar",
				"Func", "Var", "TextVar":
			default:
				return true
			}
			if len(call.Args) <= index {
				return true
			}
			lit, ok := call.Args[index].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil {
				flags[s] = strings.HasPrefix(name, "Bool")
			}
			return true
		})
	}
	r.programFlags[dir] = flags
	return flags
}

// singleDashLongFlags names the long flags written with one dash: the worker and the starter
// parse their flags with pflag, which takes two.
func singleDashLongFlags(program string, args []string) []string {
	var problems []string
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(name) > 1 {
			problems = append(problems, fmt.Sprintf("%s takes long flags with two dashes: %s", program, a))
		}
	}
	return problems
}

// checkFlags checks the arguments of a program taking Go flags: flags until the first other
// argument. It returns the problems.
func checkFlags(program string, flags map[string]bool, args []string) []string {
	var problems []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		isBool, ok := flags[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s has no flag -%s", program, name))
			continue
		}
		if !isBool && !hasValue {
			i++ // its value
		}
	}
	return problems
}

func (r *repo) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
	return err == nil
}

// isRepoPath says whether a word names a path of the repository that must exist.
func (r *repo) isRepoPath(word string) bool {
	if strings.ContainsAny(word, "<>*{}$") {
		return false
	}
	word = strings.TrimPrefix(word, "./")
	top, _, ok := strings.Cut(word, "/")
	return ok && r.topDirs[top]
}

var sep = map[string]bool{"|": true, "||": true, "&&": true, ";": true, "&": true}

// checkCommand checks one command (its words) and returns the problems. strict also checks
// that every argument naming a path of the repository exists.
func (r *repo) checkCommand(words []string, strict bool) []string {
	var problems []string
	// Split at operators; check each simple command.
	var cmd []string
	flush := func() {
		if len(cmd) > 0 {
			problems = append(problems, r.checkSimple(cmd, strict)...)
		}
		cmd = nil
	}
	for _, w := range words {
		if sep[w] {
			flush()
			continue
		}
		cmd = append(cmd, w)
	}
	flush()
	return problems
}

var assignment = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=`)

func (r *repo) checkSimple(words []string, strict bool) []string {
	var problems []string
	// Leading assignments: VAR=value.
	for len(words) > 0 {
		m := assignment.FindStringSubmatch(words[0])
		if m == nil {
			break
		}
		if strings.HasPrefix(m[1], options.EnvPrefix) && !r.envVars[m[1]] {
			problems = append(problems, fmt.Sprintf("%s is the variable of no worker or starter flag", m[1]))
		}
		words = words[1:]
	}
	if len(words) == 0 {
		return problems
	}
	if strict {
		for i, w := range words {
			if i > 0 && strings.HasPrefix(w, ">") {
				continue
			}
			if _, value, ok := strings.Cut(w, "="); ok && strings.HasPrefix(w, "-") {
				w = value
			}
			if r.isRepoPath(w) && !strings.HasPrefix(strings.TrimPrefix(w, "./"), "bin/") && !r.exists(strings.TrimPrefix(w, "./")) {
				problems = append(problems, fmt.Sprintf("no such file or directory %s", w))
			}
		}
	}
	name, args := words[0], words[1:]
	switch {
	case name == "make":
		for _, a := range args {
			if m := assignment.FindStringSubmatch(a); m != nil {
				if !r.makeVars[m[1]] {
					problems = append(problems, fmt.Sprintf("the Makefile uses no variable %s", m[1]))
				}
				continue
			}
			if strings.HasPrefix(a, "-") {
				continue
			}
			if !r.targets[a] {
				problems = append(problems, fmt.Sprintf("the Makefile has no target %s", a))
			}
		}
	case name == "go":
		problems = append(problems, r.checkGo(args)...)
	case strings.HasPrefix(strings.TrimPrefix(name, "./"), "bin/") || name == "worker" || name == "starter":
		tool := path.Base(name)
		switch tool {
		case "worker", "starter":
			if tool == "worker" && len(args) > 0 && (args[0] == "bootstrap" || args[0] == "versions") {
				args = args[1:]
			}
			problems = append(problems, singleDashLongFlags(tool, args)...)
			problems = append(problems, checkFlags(tool, r.flagsOf(tool), args)...)
		case "localenv":
			problems = append(problems, checkFlags(tool, r.flagsOf("test/env/cmd/localenv"), args)...)
		}
		if !r.binaries[tool] {
			problems = append(problems, fmt.Sprintf("neither the Makefile nor hack/ builds bin/%s", tool))
		}
	case strings.HasPrefix(strings.TrimPrefix(name, "./"), "hack/"):
		rel := strings.TrimPrefix(name, "./")
		if info, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			problems = append(problems, fmt.Sprintf("no such script %s", rel))
		} else if info.Mode()&0o111 == 0 {
			problems = append(problems, fmt.Sprintf("%s is not executable", rel))
		}
	case name == "helm":
		for i, a := range args {
			var set string
			switch {
			case a == "--set" && i+1 < len(args):
				set = args[i+1]
			case strings.HasPrefix(a, "--set="):
				set = strings.TrimPrefix(a, "--set=")
			default:
				continue
			}
			for _, kv := range strings.Split(set, ",") {
				key, _, _ := strings.Cut(kv, "=")
				if !hasValue(r.chart, strings.Split(key, ".")) {
					problems = append(problems, fmt.Sprintf("the chart has no value %s", key))
				}
			}
		}
	}
	return problems
}

// checkGo checks `go run|test|build|vet ./pkg [args]`.
func (r *repo) checkGo(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	sub := args[0]
	if sub != "run" && sub != "test" && sub != "build" && sub != "vet" && sub != "list" {
		return nil
	}
	var problems []string
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if strings.HasPrefix(a, "-") {
			// The go command's flags that take a separate value.
			switch strings.TrimLeft(a, "-") {
			case "run", "timeout", "count", "p", "tags", "o", "ldflags", "fuzz", "fuzztime", "bench", "benchtime", "C", "mod", "skip", "parallel":
				i++
			}
			continue
		}
		if !strings.HasPrefix(a, "./") && !strings.HasPrefix(a, "../") {
			if sub == "run" {
				return problems
			}
			continue
		}
		dir := strings.TrimSuffix(strings.TrimPrefix(path.Clean(a), "./"), "/...")
		if dir == "." || dir == "..." {
			continue
		}
		gofiles, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*.go"))
		if len(gofiles) == 0 && !strings.HasSuffix(a, "/...") {
			problems = append(problems, fmt.Sprintf("no Go package %s", a))
			continue
		}
		if sub == "run" {
			return append(problems, checkFlags(a, r.flagsOf(dir), rest[i+1:])...)
		}
	}
	return problems
}

var (
	testName = regexp.MustCompile(`^Test[A-Z][A-Za-z0-9_]*\*?$`)
	envName  = regexp.MustCompile(`^` + options.EnvPrefix + `[A-Z0-9_]+$`)
)

// checkInline checks inline code of the prose.
func (r *repo) checkInline(code string) []string {
	words := shellWords(code)
	if len(words) == 0 || placeholder.MatchString(words[0]) {
		return nil
	}
	first := words[0]
	switch {
	case len(words) > 1 && (first == "make" || first == "go" || first == "worker" || first == "starter"),
		strings.HasPrefix(first, "bin/") && len(first) > len("bin/"):
		return r.checkCommand(words, true)
	case strings.HasPrefix(first, "--"):
		var problems []string
		for _, w := range words {
			if !strings.HasPrefix(w, "--") || strings.Contains(w, "*") {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
			if _, ok := r.flagsOf("worker")[name]; ok {
				continue
			}
			if _, ok := r.flagsOf("starter")[name]; ok {
				continue
			}
			if _, ok := foreignFlags["--"+name]; ok {
				continue
			}
			problems = append(problems, fmt.Sprintf("--%s is no flag of the worker or the starter", name))
		}
		return problems
	case envName.MatchString(code):
		if !r.envVars[code] {
			return []string{fmt.Sprintf("%s is the variable of no worker or starter flag", code)}
		}
	case testName.MatchString(code):
		prefix, glob := strings.CutSuffix(code, "*")
		for name := range r.tests {
			if name == code || (glob && strings.HasPrefix(name, prefix)) {
				return nil
			}
		}
		return []string{fmt.Sprintf("no Go test %s", code)}
	case len(words) == 1 && r.isRepoPath(first) && !strings.HasPrefix(first, "bin/"):
		if !r.exists(strings.TrimSuffix(strings.TrimPrefix(first, "./"), "/")) {
			return []string{fmt.Sprintf("no such file or directory %s", first)}
		}
	}
	return nil
}

// ---- the chart's values ------------------------------------------------------------------

func chartValues(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "deploy", "charts", "karmadaflow", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	return values
}

func hasValue(values map[string]any, keyPath []string) bool {
	var cur any = values
	for _, k := range keyPath {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[k]; !ok {
			return false
		}
	}
	return true
}

// unknownKeys lists the keys of set that values does not have (maps compared deeply; a value
// the chart leaves empty, such as a map of annotations, takes any key).
func unknownKeys(set, values map[string]any, prefix string) []string {
	var out []string
	for k, v := range set {
		have, ok := values[k]
		if !ok {
			out = append(out, prefix+k)
			continue
		}
		sub, isMap := v.(map[string]any)
		haveMap, haveIsMap := have.(map[string]any)
		if isMap && haveIsMap && len(haveMap) > 0 {
			out = append(out, unknownKeys(sub, haveMap, prefix+k+".")...)
		}
	}
	sort.Strings(out)
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ---- the test of the test ----------------------------------------------------------------

// TestTheChecksFail feeds the checks wrong commands and links: a check that cannot fail checks
// nothing.
func TestTheChecksFail(t *testing.T) {
	r := newRepo(t)
	bad := map[string]string{
		"make no-such-target":                                     "no target",
		"make test NO_SUCH_VARIABLE=1":                            "no variable",
		"go run ./no/such/package":                                "no Go package",
		"go run ./test/env/cmd/localenv -nope 3":                  "no flag -nope",
		"bin/worker --no-such-flag":                               "no flag -no-such-flag",
		"bin/worker versions --no-such-flag":                      "no flag -no-such-flag",
		"bin/worker -temporal-address x:7233":                     "two dashes",
		"bin/starter --enable-proxy":                              "no flag -enable-proxy", // a worker flag
		"bin/no-such-tool":                                        "builds bin/no-such-tool",
		"hack/no-such-script.sh":                                  "no such script",
		"helm install x deploy/charts/karmadaflow --set nope.x=1": "no value nope.x",
		"kubectl apply -f deploy/examples/none.yaml":              "no such file",
		"KARMADAFLOW_NO_SUCH_FLAG=1 bin/worker":                   "KARMADAFLOW_NO_SUCH_FLAG",
	}
	for line, want := range bad {
		problems := strings.Join(r.checkCommand(shellWords(line), true), "; ")
		if !strings.Contains(problems, want) {
			t.Errorf("`%s`: want a problem with %q, got %q", line, want, problems)
		}
	}
	good := []string{
		"make test KARMADA_SRC=/path/to/karmada",
		"go run ./test/env/cmd/localenv -members 3 -dir .localenv # a comment",
		"bin/worker bootstrap --temporal-address x:7233 --temporal-tls-ca-file=ca.crt",
		"bin/worker versions --temporal-namespace karmadaflow",
		"bin/starter --leader-elect --ensure-period 30s",
		"helm install x deploy/charts/karmadaflow --set target=controlPlane",
	}
	for _, line := range good {
		if problems := r.checkCommand(shellWords(line), true); len(problems) > 0 {
			t.Errorf("`%s`: want no problem, got %q", line, problems)
		}
	}
	for code, want := range map[string]string{
		"--no-such-flag":           "no flag of the worker",
		"TestNoSuchTest":           "no Go test",
		"deploy/examples/none":     "no such file",
		"KARMADAFLOW_NOT_A_FLAG":   "variable of no",
		"make images IMAGE_REPO=x": "",
	} {
		problems := strings.Join(r.checkInline(code), "; ")
		if want == "" && problems != "" || !strings.Contains(problems, want) {
			t.Errorf("inline `%s`: want a problem with %q, got %q", code, want, problems)
		}
	}

	d := parseDoc("docs/x.md", []byte("# A page\n\n## Its part\n\nSee [it](#its-part), [gone](#gone), "+
		"[file](no-such.md), [readme](../README.md#the-two-commands), [up](../../x.md).\n"+
		"```sh\nmake test\n```\n"))
	var got []string
	for _, l := range d.links {
		if err := checkLink(t, d, l.text); err != nil {
			got = append(got, l.text)
		}
	}
	if want := []string{"#gone", "no-such.md", "../../x.md"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("broken links found %q, want %q", got, want)
	}
	if cmds := commands(d); len(cmds) != 1 || cmds[0].text != "make test" || cmds[0].line != 7 {
		t.Errorf("commands of the page: %+v", cmds)
	}
}

// TestConsoleBlocks: in a console block only "$ " lines are commands.
func TestConsoleBlocks(t *testing.T) {
	d := parseDoc("x.md", []byte("```console\n$ make run \\\n    FOO=1\noutput line\n$ bin/worker --help\n```\n"))
	var texts []string
	for _, c := range commands(d) {
		texts = append(texts, c.text)
	}
	if want := "make run FOO=1|bin/worker --help"; strings.Join(texts, "|") != want {
		t.Errorf("console commands %q, want %q", strings.Join(texts, "|"), want)
	}
}
