-- Numbers of the migrations this warehouse already has.
SELECT number FROM ops.migrations;
