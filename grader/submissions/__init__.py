"""What a submission goes through: taken in (intake), graded and stored (processing), shown (public)."""
