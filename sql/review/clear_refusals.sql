DELETE FROM review.refusals WHERE benchmark = $benchmark;
