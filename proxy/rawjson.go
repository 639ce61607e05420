package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Members' answers are passed on as the JSON they sent, edited in place: a list of thousands
// of objects is split into its items and each item gets the cluster annotation spliced into
// its metadata, instead of being decoded into maps and encoded again (which cost the proxy
// several times what the member spent answering).

// field is one member of a JSON object: its key (as written, without quotes) and raw value.
type field struct {
	key   []byte
	value []byte
	at    int // where value starts in the object
}

// eachField calls visit for the members of a JSON object in order until visit returns false.
// It reports the offset just past the object's '{' and whether the object has members.
func eachField(obj []byte, visit func(field) bool) (open int, members bool, err error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, false, errors.New("not a JSON object")
	}
	open = i + 1
	i = skipSpace(obj, open)
	if i < len(obj) && obj[i] == '}' {
		return open, false, trailing(obj, i+1)
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return 0, false, fmt.Errorf("offset %d: a key was expected", i)
		}
		keyStart := i
		keyEnd, err := skipString(obj, i)
		if err != nil {
			return 0, false, err
		}
		i = skipSpace(obj, keyEnd)
		if i >= len(obj) || obj[i] != ':' {
			return 0, false, fmt.Errorf("offset %d: ':' was expected", i)
		}
		i = skipSpace(obj, i+1)
		valueEnd, err := skipValue(obj, i)
		if err != nil {
			return 0, false, err
		}
		if !visit(field{key: obj[keyStart+1 : keyEnd-1], value: obj[i:valueEnd], at: i}) {
			return open, true, nil
		}
		i = skipSpace(obj, valueEnd)
		if i >= len(obj) {
			return 0, false, errors.New("unterminated object")
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return open, true, trailing(obj, i+1)
		default:
			return 0, false, fmt.Errorf("offset %d: ',' or '}' was expected", i)
		}
	}
}

// objectFields splits a JSON object into its members, in order.
func objectFields(obj []byte) ([]field, error) {
	var out []field
	_, _, err := eachField(obj, func(f field) bool { out = append(out, f); return true })
	return out, err
}

// fieldOf finds the member key of a JSON object, reading no further than it. ok is false
// when the object has no such member.
func fieldOf(obj []byte, key string) (f field, ok bool, err error) {
	_, _, err = eachField(obj, func(m field) bool {
		if keyIs(m.key, key) {
			f, ok = m, true
		}
		return !ok
	})
	return f, ok, err
}

// fieldValue is the raw value of key in a JSON object, nil if absent or obj is no object.
func fieldValue(obj []byte, key string) []byte {
	f, _, _ := fieldOf(obj, key)
	return f.value
}

// arrayElements splits a JSON array into its raw elements; null is an empty array.
func arrayElements(arr []byte) ([][]byte, error) {
	i := skipSpace(arr, 0)
	if bytes.Equal(bytes.TrimSpace(arr), []byte("null")) {
		return nil, nil
	}
	if i >= len(arr) || arr[i] != '[' {
		return nil, errors.New("not a JSON array")
	}
	var out [][]byte
	i = skipSpace(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return out, trailing(arr, i+1)
	}
	for {
		end, err := skipValue(arr, i)
		if err != nil {
			return nil, err
		}
		out = append(out, arr[i:end])
		i = skipSpace(arr, end)
		if i >= len(arr) {
			return nil, errors.New("unterminated array")
		}
		switch arr[i] {
		case ',':
			i = skipSpace(arr, i+1)
		case ']':
			return out, trailing(arr, i+1)
		default:
			return nil, fmt.Errorf("offset %d: ',' or ']' was expected", i)
		}
	}
}

// keyIs compares a raw key with a plain one, unescaping the raw key only when it has escapes.
func keyIs(raw []byte, key string) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == key
	}
	var s string
	return json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) == nil && s == key
}

// stringField returns the string value of key in a JSON object, "" if absent or not a string.
func stringField(obj []byte, key string) string {
	var s string
	if json.Unmarshal(fieldValue(obj, key), &s) != nil {
		return ""
	}
	return s
}

// setPath returns obj with the member at path (keys of nested objects) set to the raw JSON
// value: replaced where present, added first in its object otherwise, creating the objects
// on the way where they are absent or null. The result is one splice of obj.
func setPath(obj []byte, path []string, value []byte) ([]byte, error) {
	from, to, insert, err := pathEdit(obj, 0, path, value)
	if err != nil {
		return nil, err
	}
	return splice(obj, from, to, insert), nil
}

// pathEdit finds the edit setPath makes: obj[from:to] (offsets from base) becomes insert.
func pathEdit(obj []byte, base int, path []string, value []byte) (from, to int, insert []byte, err error) {
	var f field
	var found bool
	open, members, err := eachField(obj, func(m field) bool {
		if keyIs(m.key, path[0]) {
			f, found = m, true
		}
		return !found
	})
	switch {
	case err != nil:
		return 0, 0, nil, err
	case !found:
		insert = append(append(quote(path[0]), ':'), nested(path[1:], value)...)
		if members {
			insert = append(insert, ',')
		}
		return base + open, base + open, insert, nil
	case len(path) == 1:
		return base + f.at, base + f.at + len(f.value), value, nil
	case string(f.value) == "null":
		return base + f.at, base + f.at + len(f.value), nested(path[1:], value), nil
	case f.value[0] == '{':
		return pathEdit(f.value, base+f.at, path[1:], value)
	default:
		return 0, 0, nil, fmt.Errorf("%s is not an object", path[0])
	}
}

// nested is value inside objects with the keys of path: {"a":{"b":value}}.
func nested(path []string, value []byte) []byte {
	if len(path) == 0 {
		return value
	}
	return append(append(append(append([]byte{'{'}, quote(path[0])...), ':'), nested(path[1:], value)...), '}')
}

// withAnnotation returns an object with annotation key set to value in its metadata.
func withAnnotation(obj []byte, key, value string) ([]byte, error) {
	return setPath(obj, []string{"metadata", "annotations", key}, quote(value))
}

// withResourceVersion returns an object with metadata.resourceVersion set to rv.
func withResourceVersion(obj []byte, rv string) ([]byte, error) {
	return setPath(obj, []string{"metadata", "resourceVersion"}, quote(rv))
}

// resourceVersionIn reads metadata.resourceVersion of an object, list or Table.
func resourceVersionIn(obj []byte) string {
	return stringField(fieldValue(obj, "metadata"), "resourceVersion")
}

func quote(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// splice returns a new slice: data with data[from:to] replaced by insert.
func splice(data []byte, from, to int, insert []byte) []byte {
	out := make([]byte, 0, len(data)-(to-from)+len(insert))
	out = append(out, data[:from]...)
	out = append(out, insert...)
	return append(out, data[to:]...)
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t') {
		i++
	}
	return i
}

func trailing(data []byte, i int) error {
	if skipSpace(data, i) != len(data) {
		return fmt.Errorf("offset %d: data after the value", i)
	}
	return nil
}

// skipString returns the offset just past the string that starts at data[i].
func skipString(data []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return 0, errors.New("unterminated string")
		}
		j += k
		// The quote ends the string unless an odd number of backslashes escapes it.
		backslashes := 0
		for b := j - 1; b > i && data[b] == '\\'; b-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return j + 1, nil
		}
		j++
	}
}

// skipValue returns the offset just past the JSON value that starts at data[i]. Objects and
// arrays are skipped by counting brackets outside strings; their contents are checked only
// as far as that needs.
func skipValue(data []byte, i int) (int, error) {
	if i >= len(data) {
		return 0, errors.New("a value was expected")
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, err := skipString(data, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errors.New("unterminated object or array")
	default:
		j := i
		for j < len(data) && !isDelimiter(data[j]) {
			j++
		}
		if j == i {
			return 0, fmt.Errorf("offset %d: a value was expected", i)
		}
		if !validLiteral(data[i:j]) {
			return 0, fmt.Errorf("offset %d: %q is not a JSON value", i, data[i:j])
		}
		return j, nil
	}
}

func isDelimiter(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t'
}

// validLiteral reports whether lit is true, false, null or a JSON number.
func validLiteral(lit []byte) bool {
	switch string(lit) {
	case "true", "false", "null":
		return true
	}
	return (lit[0] == '-' || lit[0] >= '0' && lit[0] <= '9') && json.Valid(lit)
}
