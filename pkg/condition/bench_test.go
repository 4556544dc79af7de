package condition

import "testing"

// What one condition costs to compile, and to find once compiled.
func BenchmarkCompile(b *testing.B) {
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			if _, err := compile("result < 0.01"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("again", func(b *testing.B) {
		for b.Loop() {
			if _, err := Compile("result < 0.01"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
