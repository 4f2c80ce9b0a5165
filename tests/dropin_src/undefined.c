int not_defined_anywhere(int);
int main(void) { return not_defined_anywhere(1); }
