-- A model forked from another model's checkpoint starts with a copy of that
-- checkpoint as its own step 0 (the only checkpoints at step 0), and names
-- the checkpoint it was forked from, which retention then keeps.
ALTER TABLE checkpoints DROP CONSTRAINT checkpoints_step_check;
ALTER TABLE checkpoints ADD CONSTRAINT checkpoints_step_check CHECK (step >= 0);
ALTER TABLE models ADD COLUMN forked_from uuid REFERENCES checkpoints (id) ON DELETE SET NULL;
