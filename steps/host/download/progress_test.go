package download

import (
	"reflect"
	"testing"
)

func TestTenPercentSteps(t *testing.T) {
	const size = 100 << 20
	cases := []struct {
		name  string
		size  int64
		calls []int64
		want  []int
	}{
		{"small file prints nothing", 10 << 20, nil, nil},
		{"fresh download", size, []int64{0, 5 << 20, 10 << 20, 11 << 20, 35 << 20, 99 << 20, size}, []int{10, 30, 90, 100}},
		{"resumed at 42%", size, []int64{42 << 20, 45 << 20, 50 << 20, size}, []int{40, 50, 100}},
		{"restart does not go back", size, []int64{0, 60 << 20, 0, 20 << 20, 70 << 20}, []int{60, 70}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			f := TenPercentSteps(tc.size, func(p int) { got = append(got, p) })
			if tc.size < ProgressThreshold {
				if f != nil {
					t.Fatal("progress for a small file")
				}
				return
			}
			for _, d := range tc.calls {
				f(d, tc.size)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPercentChanges(t *testing.T) {
	var got [][2]int64
	f := PercentChanges(func(done, total int64) { got = append(got, [2]int64{done, total}) })
	for _, d := range []int64{420, 421, 429, 430, 999, 999, 1000, 1000} {
		f(d, 1000)
	}
	f(5, 0) // no size: nothing to tell
	want := [][2]int64{{420, 1000}, {430, 1000}, {999, 1000}, {1000, 1000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
