DELETE FROM review.annotations WHERE benchmark = $benchmark;
