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
