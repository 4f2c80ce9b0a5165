	.text
	.p2align 4
	.globl	main
	.type	main, @function
main:
	.cfi_startproc
	xorl	%eax, %eax
	ret
	.cfi_endproc
	.size	main, .-main
