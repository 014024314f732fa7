// Placeholder: the A2DP sender lands here.
