package strictjson

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
)

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decoder stores parsed values into Go values by the package's rules.
type decoder struct {
	allowUnknown bool
}

// store decodes v into dst, which is settable.
func (d *decoder) store(v *value, dst reflect.Value, path string) error {
	t := dst.Type()
	if t == rawMessageType {
		if v.kind == kindNull {
			return refuse(path, "is null")
		}
		dst.SetBytes(append(json.RawMessage(nil), v.raw...))
		return nil
	}
	if t.Kind() == reflect.Pointer {
		if v.kind == kindNull {
			return refuse(path, "is null")
		}
		p := reflect.New(t.Elem())
		if err := d.store(v, p.Elem(), path); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	}
	if t.Kind() == reflect.Interface {
		if t.NumMethod() != 0 {
			return refuse(path, "cannot decode into Go type "+t.String())
		}
		g, err := generic(v, path)
		if err != nil {
			return err
		}
		if g == nil {
			dst.SetZero()
		} else {
			dst.Set(reflect.ValueOf(g))
		}
		return nil
	}
	if v.kind == kindNull {
		return refuse(path, "is null")
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		if err := dst.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(v.raw); err != nil {
			return refuse(path, "is not a valid "+t.String())
		}
		return nil
	}
	if v.kind == kindString && reflect.PointerTo(t).Implements(textType) {
		if err := dst.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(v.s)); err != nil {
			return refuse(path, "is not a valid "+t.String())
		}
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		if v.kind != kindString {
			return mismatch(path, "a string", v)
		}
		dst.SetString(v.s)
	case reflect.Bool:
		if v.kind != kindBool {
			return mismatch(path, "a boolean", v)
		}
		dst.SetBool(v.b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.kind != kindNumber || !isInteger(v.raw) {
			return mismatch(path, "an integer", v)
		}
		n, err := strconv.ParseInt(string(v.raw), 10, t.Bits())
		if err != nil {
			return refuse(path, "integer does not fit "+t.String())
		}
		dst.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if v.kind != kindNumber || !isInteger(v.raw) || v.raw[0] == '-' {
			return mismatch(path, "a non-negative integer", v)
		}
		n, err := strconv.ParseUint(string(v.raw), 10, t.Bits())
		if err != nil {
			return refuse(path, "integer does not fit "+t.String())
		}
		dst.SetUint(n)
	case reflect.Float32, reflect.Float64:
		if v.kind != kindNumber {
			return mismatch(path, "a number", v)
		}
		f, err := strconv.ParseFloat(string(v.raw), t.Bits())
		if err != nil {
			return refuse(path, "number does not fit "+t.String())
		}
		dst.SetFloat(f)
	case reflect.Struct:
		return d.structure(v, dst, path)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return refuse(path, "cannot decode into Go type "+t.String())
		}
		if v.kind != kindObject {
			return mismatch(path, "an object", v)
		}
		m := reflect.MakeMapWithSize(t, len(v.members))
		for _, kv := range v.members {
			el := reflect.New(t.Elem()).Elem()
			if err := d.store(kv.val, el, member(path, kv.key)); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(kv.key).Convert(t.Key()), el)
		}
		dst.Set(m)
	case reflect.Slice:
		if v.kind != kindArray {
			return mismatch(path, "an array", v)
		}
		s := reflect.MakeSlice(t, len(v.elems), len(v.elems))
		for i, el := range v.elems {
			if err := d.store(el, s.Index(i), element(path, i)); err != nil {
				return err
			}
		}
		dst.Set(s)
	case reflect.Array:
		if v.kind != kindArray {
			return mismatch(path, "an array", v)
		}
		if len(v.elems) != t.Len() {
			return refuse(path, "must have "+strconv.Itoa(t.Len())+" elements, not "+strconv.Itoa(len(v.elems)))
		}
		for i, el := range v.elems {
			if err := d.store(el, dst.Index(i), element(path, i)); err != nil {
				return err
			}
		}
	default:
		return refuse(path, "cannot decode into Go type "+t.String())
	}
	return nil
}

// structure decodes an object into a struct: exact keys, every required
// field present, unknown keys only when the format allows them.
func (d *decoder) structure(v *value, dst reflect.Value, path string) error {
	if v.kind != kindObject {
		return mismatch(path, "an object", v)
	}
	sf, err := fieldsOf(dst.Type())
	if err != nil {
		return err
	}
	seen := make([]bool, len(sf.list))
	for _, kv := range v.members {
		i, ok := sf.byName[kv.key]
		if !ok {
			if twin, ok := sf.caseTwin(kv.key); ok {
				return refuse(member(path, kv.key), "unknown key, differs from "+strconv.Quote(twin)+" only in case")
			}
			if !d.allowUnknown {
				return refuse(member(path, kv.key), "unknown key")
			}
			continue
		}
		seen[i] = true
		if err := d.store(kv.val, dst.FieldByIndex(sf.list[i].index), member(path, kv.key)); err != nil {
			return err
		}
	}
	for i, f := range sf.list {
		if !seen[i] && !f.optional {
			return refuse(member(path, f.name), "missing")
		}
	}
	return nil
}

func mismatch(path, want string, v *value) error {
	if v.kind == kindNumber && (want == "an integer" || want == "a non-negative integer") {
		return refuse(path, "must be "+want+" (no fraction, exponent or sign on zero)")
	}
	return refuse(path, "must be "+want+", not "+v.kind.String())
}

// generic is v as encoding/json stores it in an empty interface:
// map[string]any, []any, string, float64, bool or nil.
func generic(v *value, path string) (any, error) {
	switch v.kind {
	case kindNull:
		return nil, nil
	case kindBool:
		return v.b, nil
	case kindString:
		return v.s, nil
	case kindNumber:
		f, err := strconv.ParseFloat(string(v.raw), 64)
		if err != nil {
			return nil, refuse(path, "number does not fit float64")
		}
		return f, nil
	case kindArray:
		out := make([]any, len(v.elems))
		for i, el := range v.elems {
			g, err := generic(el, element(path, i))
			if err != nil {
				return nil, err
			}
			out[i] = g
		}
		return out, nil
	}
	out := make(map[string]any, len(v.members))
	for _, kv := range v.members {
		g, err := generic(kv.val, member(path, kv.key))
		if err != nil {
			return nil, err
		}
		out[kv.key] = g
	}
	return out, nil
}
