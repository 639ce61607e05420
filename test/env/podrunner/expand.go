package podrunner

import "strings"

// expand replaces the $(VAR) references of s as the kubelet does for a container's env
// values, command and args: a reference to a defined variable becomes its value, one to an
// undefined variable stays as written, "$$" is an escaped "$", and a "$" followed by
// anything else is kept. k8s.io/kubernetes' expansion package cannot be imported by this
// module, and no staging module carries a copy.
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				// An unterminated reference is kept as written.
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if value, ok := lookup(name); ok {
				b.WriteString(value)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// envLookup looks names up in vars.
func envLookup(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}
