// Attack: hand in another student's file from the same batch folder.
#include "../alice/reduce.cu"
