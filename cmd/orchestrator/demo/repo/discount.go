package shop

// ApplyDiscount takes percent off total (cents).
func ApplyDiscount(total, percent int) int {
	return total - total*percent/100
}
