package strictjson

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// structFields is what a struct type accepts: its fields by exact JSON name.
type structFields struct {
	list   []fieldInfo
	byName map[string]int
}

// fieldInfo is one decodable field. index reaches it through embedded
// structs; optional fields (tagged omitempty or omitzero) may be absent.
type fieldInfo struct {
	name     string
	index    []int
	optional bool
}

var fieldCache sync.Map // reflect.Type -> *structFields or error

// fieldsOf returns the fields of struct type t. The error is a programming
// error (two fields with one name, an unsupported tag option), not a
// property of a document.
func fieldsOf(t reflect.Type) (*structFields, error) {
	if c, ok := fieldCache.Load(t); ok {
		if err, bad := c.(error); bad {
			return nil, err
		}
		return c.(*structFields), nil
	}
	sf := &structFields{byName: map[string]int{}}
	err := collect(t, nil, sf)
	if err != nil {
		fieldCache.Store(t, err)
		return nil, err
	}
	fieldCache.Store(t, sf)
	return sf, nil
}

func collect(t reflect.Type, prefix []int, sf *structFields) error {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		index := append(append([]int(nil), prefix...), i)
		if f.Anonymous && name == "" {
			if f.Type.Kind() == reflect.Struct {
				if err := collect(f.Type, index, sf); err != nil {
					return err
				}
				continue
			}
			if f.Type.Kind() == reflect.Pointer {
				return fmt.Errorf("strictjson: %s: embedded pointer %s is not supported", t, f.Type)
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		optional := false
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "":
			case "omitempty", "omitzero":
				optional = true
			default:
				return fmt.Errorf("strictjson: %s.%s: tag option %q is not supported", t, f.Name, o)
			}
		}
		if _, dup := sf.byName[name]; dup {
			return fmt.Errorf("strictjson: %s: two fields are named %q", t, name)
		}
		sf.byName[name] = len(sf.list)
		sf.list = append(sf.list, fieldInfo{name: name, index: index, optional: optional})
	}
	return nil
}

// caseTwin returns the field whose name equals key without regard to case
// (the match encoding/json would make), if any.
func (sf *structFields) caseTwin(key string) (string, bool) {
	for _, f := range sf.list {
		if strings.EqualFold(f.name, key) {
			return f.name, true
		}
	}
	return "", false
}
